import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The queries written once (`SQLStoreBackend`) run on the pool through the executor plugins
// use, each statement kept prepared on its connection.
extension PostgresStore: SQLStoreBackend, AccountStore, WebhookStore, ConsoleStore {
    public func sqlRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await read { conn in try body(PostgresExecutor(conn, prepares: true)) }
    }

    public func sqlWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await write { conn in try body(PostgresExecutor(conn, prepares: true)) }
    }

    public func sqlWriteStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T)
        async throws -> T
    {
        try await writeStatement { conn in try body(PostgresExecutor(conn, prepares: true)) }
    }

    /// A transaction of its own: nodes write side by side, and a commit waits for no other.
    public func sqlGroupWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T)
        async throws -> T
    {
        try await sqlWrite(body)
    }

    /// No: every write commits alone (`sqlGroupWrite`).
    public var sqlGroupsWrites: Bool { false }

    /// A retry this node claims is leased to it (`claimDueDeliveries`).
    public var sqlRetryLease: SQLRetryLease? {
        SQLRetryLease(owner: nodeID, milliseconds: Self.milliseconds(leaseDuration))
    }

    /// Always: leases keep two nodes off one retry.
    public func sqlTakesRetries() -> Bool { true }

    /// A pooled read; the statement stays prepared on each connection under a name derived
    /// from its text, rendered once.
    public func sqlPointLookUp<T: Sendable>(
        _ lookup: SQLPointLookup, _ arguments: [SQLValue], decode: @escaping @Sendable (any ColumnValues) throws -> T
    ) async throws -> T? {
        let statement = Self.pointLookupStatements[lookup.rawValue]
        return try await read { conn in
            try conn.run(statement.text, statement.statement.bindings(arguments).map(PostgresExecutor.parameter))
                .rows.first.map { try decode($0) }
        }
    }

    /// The point lookups in PostgreSQL's placeholders, rendered once.
    static let pointLookupStatements = SQLPointLookup.allCases.map { lookup in
        let statement = lookup.statement(for: PostgresDialect())
        return (statement: statement, text: statement.text(for: PostgresDialect()))
    }
}
