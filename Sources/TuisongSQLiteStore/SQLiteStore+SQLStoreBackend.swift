import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The queries written once (`SQLStoreBackend`) run on GRDB through the executor plugins use.
extension SQLiteStore: SQLStoreBackend, AccountStore, SettingsStore, ChannelCredentialStore, TemplateStore,
    WebhookStore, ConsoleStore, ConsoleSessionStore, ProviderTokenStore
{
    public func sqlRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await read { db in try body(GRDBExecutor(db: db)) }
    }

    public func sqlQuickRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await sharedDatabase.quickRead(body)
    }

    public func sqlWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T {
        try await write { db in try body(GRDBExecutor(db: db)) }
    }

    /// As `sqlWrite`: SQLite's one writer connection has no round trip to save.
    public func sqlWriteStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T)
        async throws -> T
    {
        try await sqlWrite(body)
    }

    /// Group-committed (`groupWrite`).
    public func sqlGroupWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T)
        async throws -> T
    {
        try await groupWrite { db in try body(GRDBExecutor(db: db)) }
    }

    /// Yes: one commit for the small writes arriving together (`groupWrite`).
    public var sqlGroupsWrites: Bool { true }

    /// None: retries are the file's one dispatcher's, never leased.
    public var sqlRetryLease: SQLRetryLease? { nil }

    /// Retries are the dispatcher's too (`SQLiteStore+WorkQueue`).
    public func sqlTakesRetries() -> Bool { dispatcherLock.acquire().held }

    /// On a point reader, on the calling thread (`pointLookUp`).
    public func sqlPointLookUp<T: Sendable>(
        _ lookup: SQLPointLookup, _ arguments: [SQLValue], decode: @escaping @Sendable (any ColumnValues) throws -> T
    ) async throws -> T? {
        try await pointLookUp(lookup, arguments, decode: decode)
    }
}
