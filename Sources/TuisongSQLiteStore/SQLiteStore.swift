import Foundation
import GRDB
import Synchronization
import TuisongCore
import TuisongSQLStore

/// The SQLite implementation of `Store`, on a GRDB `DatabasePool`.
///
/// One writer connection and a few concurrent reader connections on one database file in
/// WAL mode. Several processes may open the same file at once (the server and the `tuisong`
/// CLI); SQLite's file locks serialise their writes and the busy timeout makes a writer wait
/// for the other instead of failing.
///
/// ```swift
/// let store = try SQLiteStore(path: "data/tuisong.db")
/// defer { try? store.close() }
/// let app = try await store.createApp(name: "Demo", bundleID: "com.example.demo", apiKeyHash: hash)
/// ```
///
/// Device registrations are group-committed (see `registerDevice(appID:_:)`). Every error
/// thrown is a `StoreError` whose message carries SQLite's code and text (or a
/// `CancellationError` when the calling task was cancelled while waiting for a connection).
public final class SQLiteStore: Store {
    /// How the store opens its database.
    public struct Options: Sendable {
        /// `false` (the default): `PRAGMA synchronous = NORMAL`. In WAL mode a commit then
        /// writes the WAL without waiting for fsync; the WAL is synced at each checkpoint
        /// (under write load the background checkpointer runs every 50 ms or so).
        /// A committed transaction survives the process being killed (`kill -9`, a crash),
        /// since its pages are in the OS page cache. A power loss or kernel crash may lose
        /// the transactions committed since the WAL was last synced; the database itself
        /// stays consistent. `true`: `synchronous = FULL`, every commit waits for fsync and
        /// survives power loss, at a large cost in commit latency and registrations/s.
        public var synchronousFull: Bool
        /// How long a write waits for another connection (another process) holding the
        /// write lock before failing with `StoreError.unavailable`.
        public var busyTimeout: TimeInterval
        /// GRDB reader connections (listings, pages, counts); concurrent reads beyond this
        /// wait, suspended, for a free one. Point lookups use their own connections
        /// (`PointReaders`), one per thread looking up at the same moment.
        public var maximumReaderCount: Int
        /// The most device registrations committed in one group-commit transaction.
        public var maximumRegistrationBatch: Int
        /// Where `created_at`, `updated_at` and other timestamps come from.
        public var clock: any TuisongCore.Clock
        /// The plugins' own migrations, applied after the core ones when the store opens.
        /// Pass every provider the binary knows (mounted or not), so the server and the CLI
        /// agree on the schema of one file.
        public var pluginMigrations: [PluginSchema]
        /// Told how long each `write` transaction took, waiting for the writer connection
        /// included (the gateway's store metrics). Group-committed registrations are not timed.
        public var writeObserver: (@Sendable (Duration) -> Void)?

        public init(
            synchronousFull: Bool = false, busyTimeout: TimeInterval = 5,
            maximumReaderCount: Int = max(4, ProcessInfo.processInfo.activeProcessorCount),
            maximumRegistrationBatch: Int = 256,
            clock: any TuisongCore.Clock = SystemClock(), pluginMigrations: [PluginSchema] = []
        ) {
            self.synchronousFull = synchronousFull
            self.busyTimeout = busyTimeout
            self.maximumReaderCount = maximumReaderCount
            self.maximumRegistrationBatch = maximumRegistrationBatch
            self.clock = clock
            self.pluginMigrations = pluginMigrations
        }
    }

    /// One plugin's migrations; the type is the shared store's (`TuisongSQLStore.PluginSchema`),
    /// for both backends.
    public typealias PluginSchema = TuisongSQLStore.PluginSchema

    /// The database file.
    public let path: String
    let pool: DatabasePool
    let clock: any TuisongCore.Clock
    let batcher: RegistrationBatcher
    let checkpointer: WALCheckpointer
    /// What the writes lately said: a full disk or an unusable file (`/healthz`).
    public let health: StoreHealth
    let pointReaders: PointReaders
    /// Held by the one process that dispatches this file's messages (`SQLiteStore+WorkQueue`).
    let dispatcherLock: DispatcherLock
    /// Where the dispatcher's walk through messages left `sending` by an earlier dispatcher has
    /// got to (message id); nil once every one of them was claimed again.
    let sendingRecovery = Mutex<Int64?>(nil)
    /// Small writes that arrive together share one transaction (`groupWrite`).
    let groupedWrites: StoreBatcher<GroupedWrite, any Sendable>
    /// Records of messages this process created and the dispatcher has not claimed yet
    /// (`CreatedMessageRecords`; ~13 MB of a 300,000-request run's heap at its limit,
    /// `make bench-memory`).
    let createdRecords = CreatedMessageRecords(limit: 20_000)
    /// Deletes expired idempotency keys now and then (`createMessage`).
    let idempotencyKeySweeper = IdempotencyKeySweeper()
    /// The core migrations followed by the plugins'.
    let migrator: DatabaseMigrator
    let writeObserver: (@Sendable (Duration) -> Void)?
    /// Database files that were readable by group or others and were set to 0600 on opening
    /// (`"path 0644 → 0600"`), for the caller to log.
    public let permissionChanges: [String]
    /// Serialises `close()` calls and remembers that the pool is closed.
    private let closed = Mutex(false)
    /// This process's subscribers to store changes (`SQLiteStore+Changes`).
    let changeFeed = LocalChangeFeed()
    /// The webhook events this store writes with the changes that cause them.
    public let webhookOutbox = WebhookOutbox(subscriptions: WebhookSubscriptions())

    /// Opens (creating it and its parent directory if needed) the database at `path` and
    /// brings its schema up to date. A new directory is created 0700 and the database files
    /// are created 0600; existing ones readable by others are set to 0600.
    ///
    /// - Throws: `StoreError(.unavailable, …)` when the file cannot be opened or migrated.
    public init(path: String, configuration: Options = .init()) throws {
        self.path = path
        self.dispatcherLock = DispatcherLock(databasePath: path)
        self.clock = configuration.clock
        let migrator = try Schema.migrator(plugins: configuration.pluginMigrations)
        self.migrator = migrator
        self.writeObserver = configuration.writeObserver
        do {
            permissionChanges = try DatabaseFilePermissions.prepare(databasePath: path)
        } catch {
            throw StoreError(.unavailable, "cannot create the directory of \(path): \(error)")
        }

        var config = Configuration()
        config.foreignKeysEnabled = true
        config.busyMode = .timeout(configuration.busyTimeout)
        config.maximumReaderCount = max(1, configuration.maximumReaderCount)
        config.label = "tuisong.store"
        config.prepareDatabase { db in
            // The WAL is reset, not shrunk, after a checkpoint; cap what it keeps on disk
            // after a burst of writes.
            try db.execute(sql: "PRAGMA journal_size_limit = 67108864")
        }
        do {
            // DatabasePool puts the database in WAL mode.
            pool = try Self.openPool(path: path, configuration: config, busyTimeout: configuration.busyTimeout)
            // Only the writer commits, so only its setting matters. Set here rather than in
            // prepareDatabase: GRDB sets NORMAL itself when it switches the pool to WAL.
            let synchronous = configuration.synchronousFull ? "FULL" : "NORMAL"
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = \(synchronous)")
                // SQLite's default (1000 pages, 4 MB) makes the writer stop to checkpoint
                // every few hundred registrations. 8000 pages (32 MB of WAL) measured about
                // twice the sustained registration rate; the background checkpointer does
                // most of the copying in between.
                try db.execute(sql: "PRAGMA wal_autocheckpoint = 8000")
            }
            try Self.migrate(pool, migrator)
        } catch {
            throw ErrorMapping.storeError(error)
        }
        let checkpointer: WALCheckpointer
        do {
            checkpointer = try WALCheckpointer(path: path, busyTimeout: configuration.busyTimeout)
        } catch {
            try? pool.close()
            throw ErrorMapping.storeError(error)
        }
        self.checkpointer = checkpointer
        let writeObserver = configuration.writeObserver
        let health = StoreHealth()
        self.health = health
        groupedWrites = StoreBatcher(concurrency: 1, maxBatch: 256) { [pool] writes in
            try await health.noting(timedBy: writeObserver, mapError: ErrorMapping.storeError) {
                defer { checkpointer.noteCommit() }
                return try await pool.write { db in try Self.runGrouped(db, writes) }
            }
        }
        pointReaders = PointReaders(path: path, busyTimeout: configuration.busyTimeout)
        batcher = RegistrationBatcher(
            writer: pool, maximumBatchSize: configuration.maximumRegistrationBatch,
            clock: configuration.clock, apply: Self.applyRegistration, health: health,
            afterCommit: { checkpointer.noteCommit() })
    }

    /// Two processes opening a fresh file at the same moment both see "nothing applied";
    /// the loser's next migration then fails on a table the winner just created. Retrying
    /// re-reads what is applied, so the loser finds the work done (`migrate`).
    /// Opening switches a new file to WAL, and SQLite answers that pragma SQLITE_BUSY at once,
    /// without its busy handler, while another process (the CLI beside a starting server) is
    /// doing the same. Retried briefly, within the busy timeout. The pause is real time (not the
    /// store's clock): it waits for another process's lock, in a synchronous initialiser.
    private static func openPool(path: String, configuration: Configuration, busyTimeout: TimeInterval) throws
        -> DatabasePool
    {
        let deadline = Date().addingTimeInterval(busyTimeout)
        var delay: useconds_t = 5_000
        while true {
            do {
                return try DatabasePool(path: path, configuration: configuration)
            } catch let error as DatabaseError where error.resultCode == .SQLITE_BUSY && Date() < deadline {
                usleep(delay)
                delay = min(delay * 2, 100_000)
            }
        }
    }

    /// Applies what is not applied yet, while other stores may be migrating the same fresh file
    /// (a CLI command beside a starting server, or several stores of one process). Each
    /// migration is a transaction of its own and GRDB reads what is applied before the first:
    /// a migration another store applied since then fails here ("table … already exists"). Such
    /// a failure is retried for as long as the applied set grows between two failures — someone
    /// is making progress, and the next attempt starts from there — and thrown once it does
    /// not: then it is this migration's own. A fixed number of attempts was not enough: with
    /// four stores opening one file on a busy machine, one lost three races in a row (CI).
    private static func migrate(_ pool: DatabasePool, _ migrator: DatabaseMigrator) throws {
        var applied = try pool.read { try migrator.appliedIdentifiers($0) }.count
        while true {
            do {
                try migrator.migrate(pool)
                return
            } catch {
                let now = try pool.read { try migrator.appliedIdentifiers($0) }.count
                guard now > applied else { throw error }
                applied = now
            }
        }
    }

    /// Folds the WAL into the database file (as far as other processes' readers allow) and
    /// closes every connection. Calls after the first do nothing. Afterwards every method
    /// throws `StoreError.unavailable`; registrations still queued fail the same way.
    public func close() throws {
        try closed.withLock { isClosed in
            if isClosed { return }
            pointReaders.close()
            // GRDB closes the writer before the (read-only) readers, so the last connection
            // to close cannot checkpoint and remove the WAL as SQLite otherwise would: copy
            // everything back and truncate the WAL here. TRUNCATE waits (busy timeout) for
            // another process's readers; failing is harmless, the WAL stays valid.
            try? checkpointer.close()
            dispatcherLock.release()
            _ = try? pool.writeWithoutTransaction { try $0.checkpoint(.truncate) }
            do {
                try pool.close()
            } catch {
                throw ErrorMapping.storeError(error)
            }
            isClosed = true
        }
    }

    /// The core migrations this binary knows, in the order they apply.
    public static func migrationNames() -> [String] {
        Schema.migrator.migrations
    }

    /// The migrations this store applies: the core ones, then the plugins' as
    /// `<plugin>:<identifier>`.
    public var migrationNames: [String] { migrator.migrations }

    /// GRDB's record of applied migrations (`appliedMigrations()` reads it, `SQLStoreBackend`).
    public var sqlMigrationTable: String { "grdb_migrations" }

    /// The database file's path.
    public var location: String { path }

    // MARK: - Plumbing

    /// A read in a deferred transaction: the closure sees one consistent snapshot.
    func read<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw ErrorMapping.storeError(error)
        }
    }

    /// A point lookup on a raw prepared statement, on the calling thread (see `PointReaders`).
    ///
    /// The calling thread (an HTTP server thread, for lookups) never waits for a lock here: if
    /// the database is locked, the lookup is repeated on the cooperative pool, where it may
    /// wait up to the busy timeout while the caller is suspended.
    func pointLookUp<T: Sendable>(
        _ query: SQLPointLookup, _ arguments: [SQLValue], decode: @escaping @Sendable (PointRow) throws -> T
    ) async throws -> T? {
        do {
            return try pointReaders.withConnection { connection in
                try connection.first(query, arguments, decode: decode)
            }
        } catch is PointReaderBusy {
            pointReaders.noteBusyFallback()
            let readers = pointReaders
            let waited = Task.detached {
                try readers.withConnection(waiting: true) { connection in
                    try connection.first(query, arguments, decode: decode)
                }
            }
            do {
                return try await waited.value
            } catch is PointReaderBusy {
                throw StoreError(.unavailable, "the database stayed locked for the whole busy timeout")
            }
        }
    }

    /// A read without a transaction, through GRDB's async path, for single statements that
    /// may run long (counts, listings) and must not hold a cooperative thread meanwhile.
    func readOneStatement<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        do {
            return try await pool.unsafeRead(body)
        } catch {
            throw ErrorMapping.storeError(error)
        }
    }

    /// A write in an immediate transaction on the writer connection.
    func write<T: Sendable>(_ body: @Sendable (Database) throws -> T) async throws -> T {
        try await health.noting(timedBy: writeObserver, mapError: ErrorMapping.storeError) {
            defer { checkpointer.noteCommit() }
            return try await pool.write(body)
        }
    }

    /// `body` in a transaction shared with the other grouped writes that arrive while one is
    /// being committed (group commit), under a savepoint of its own: it commits or fails alone,
    /// as with `write`, but a burst of small writes (a chat message's badge grant each) costs a
    /// few commits instead of one each.
    func groupWrite<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        let result = try await groupedWrites.submit(GroupedWrite { db in try body(db) })
        guard let typed = result as? T else { throw StoreError(.unavailable, "a grouped write answered \(result)") }
        return typed
    }

    /// One write of a group.
    struct GroupedWrite: Sendable {
        var body: @Sendable (Database) throws -> any Sendable
    }

    /// Runs a group's writes in the caller's transaction, each under its own savepoint (kept
    /// prepared: `inPreparedSavepoint`). A write that throws is rolled back alone and answered
    /// with its error; one that made SQLite end the whole transaction fails the group.
    static func runGrouped(_ db: Database, _ writes: [GroupedWrite]) throws -> [Result<any Sendable, any Error>] {
        if writes.count == 1 { return [.success(try writes[0].body(db))] }
        var results: [Result<any Sendable, any Error>] = []
        results.reserveCapacity(writes.count)
        for write in writes {
            do {
                results.append(.success(try db.inPreparedSavepoint { try write.body(db) }))
            } catch let lost as TransactionLost {
                throw lost.cause
            } catch {
                results.append(.failure(ErrorMapping.storeError(error)))
            }
        }
        return results
    }

    public var nowMilliseconds: Int64 { SQLTime.milliseconds(clock.now) }
}
