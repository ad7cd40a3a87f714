import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The queries written once (`SQLStoreBackend`) run on the pool through the executor plugins
// use, each statement kept prepared on its connection.
extension PostgresStore: SQLStoreBackend, WebhookStore, ConsoleStore {
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
}
