import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The PostgreSQL implementation of the gateway's store, for several `tuisong serve` nodes on
/// one database (`database.url: postgresql://…`).
///
/// Every call runs on the pool's own threads (`PostgresPool`): a task awaiting the store is
/// suspended, never blocking a cooperative thread or an HTTP server thread on the network.
/// Errors come back as `StoreError`: a unique or check violation is `.conflict`, a missing
/// parent row `.notFound`, a lost or refused connection `.unavailable`.
///
/// The store has a node identity (`nodeID`): the leases of the work it claims
/// (`WorkQueue`) carry it, and its flushes are refused once another node took the work over.
public final class PostgresStore: Sendable {
    public struct Options: Sendable {
        public var clock: any TuisongCore.Clock
        /// The plugins' migrations, applied after the core ones.
        public var pluginMigrations: [PluginSchema]
        /// Connections in the pool (each with its own thread).
        public var poolSize: Int
        /// How long a claimed slice or retry stays this node's without a renewal. A node that
        /// dies holds its work this long at most; a node that cannot renew in time stops
        /// sending.
        public var leaseDuration: Duration
        /// Audience positions per slice, roughly: what one node sends before another can help.
        public var sliceSize: Int
        /// The least time between the starts of two claims while claims find work but not a full
        /// batch (`WorkQueue.claimPace`, `cluster.claim_pace_ms`).
        public var claimPace: Duration
        /// 50 ms: under a chat load each claim then takes what 50 ms brought, and its runs' flushes
        /// go together. Claimed as fast as the statements allowed (50 lines a claim), one node's
        /// chat was slower at saturation and cost more CPU a line at a set rate, because every
        /// statement after the claim shrank with it (issue #47, `bench/messages.sh`, docs/benchmarks.md
        /// "Session twenty-two": at 1,000 lines/s a pace of 50 ms against 20 took a fifth less CPU
        /// a line, p50 +20 ms, p99 no worse).
        public static let defaultClaimPace: Duration = .milliseconds(50)
        /// Whether a message sent whole and due at once is claimed by this node as it is stored,
        /// while this store's dispatcher claims (`AcceptedClaims`). Off, every message is planned
        /// and claimed through the database's queue.
        public var claimsAtAccept: Bool
        /// This process's identity in leases and heartbeats; new for every start.
        public var nodeID: String
        /// Told how long each write transaction took (the gateway's store metrics).
        public var writeObserver: (@Sendable (Duration) -> Void)?
        public var logger: Logger

        public init(
            clock: any TuisongCore.Clock = SystemClock(), pluginMigrations: [PluginSchema] = [],
            poolSize: Int = 8, leaseDuration: Duration = .seconds(30), sliceSize: Int = 20_000,
            claimPace: Duration = Options.defaultClaimPace, claimsAtAccept: Bool = true,
            nodeID: String = PostgresStore.makeNodeID(), logger: Logger = Logger(label: "tuisong.store")
        ) {
            self.claimsAtAccept = claimsAtAccept
            self.clock = clock
            self.pluginMigrations = pluginMigrations
            self.poolSize = poolSize
            self.leaseDuration = leaseDuration
            self.sliceSize = sliceSize
            self.claimPace = claimPace
            self.nodeID = nodeID
            self.logger = logger
        }
    }

    /// `host-pid-random`: readable in `nodes` and in logs, unique per start.
    public static func makeNodeID() -> String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count)
        let host = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        let random = (0..<6).map { _ in String("abcdefghijklmnopqrstuvwxyz0123456789".randomElement()!) }.joined()
        return "\(host)-\(getpid())-\(random)"
    }

    let url: String
    let pool: PostgresPool
    let clock: any TuisongCore.Clock
    let pluginMigrations: [PluginSchema]
    let writeObserver: (@Sendable (Duration) -> Void)?
    /// What the writes lately said: a full disk or no server (`/healthz`).
    public let health = StoreHealth()
    let logger: Logger
    public let nodeID: String
    /// The webhook events this store writes with the changes that cause them.
    public let webhookOutbox = WebhookOutbox(subscriptions: WebhookSubscriptions())
    public let leaseDuration: Duration
    let sliceSize: Int
    public let claimPace: Duration
    private let closed = Atomic<Bool>(false)
    /// The change feed: NOTIFY out, a listener in (`PostgresStore+Changes`).
    let changes = PostgresChanges()
    /// Deletes expired idempotency keys now and then (`createMessage`).
    let idempotencyKeySweeper = IdempotencyKeySweeper()
    /// Whether planning still looks for messages left sending without slices (from before the
    /// work queue): at its first pass, and as long as a pass finds one (`planDueMessages`).
    let sendingWithoutSlicesMayRemain = Atomic<Bool>(true)
    /// The apps of the messages this node claimed (`claimWork`'s runs per app).
    let claimedMessageApps = ClaimedMessageApps()
    /// Records of the queued messages this node created, for the claim that starts each
    /// (`claimWork`): a first claim of a message's one slice takes its record from here.
    let createdRecords = CreatedMessageRecords()
    /// Messages this node claimed as it stored them, for its dispatcher (`claimWork`); nil when
    /// `Options.claimsAtAccept` is off.
    let acceptedClaims: AcceptedClaims?
    /// When this node's dispatcher last looked at the database's queue (`claimWork`), in
    /// `ContinuousClock` time.
    let lastQueueClaim = Mutex<ContinuousClock.Instant?>(nil)
    /// Analyzes the queue tables while a burst fills them (`claimWork`).
    let queueStatistics = QueueStatisticsKeeper()
    /// Messages accepted while others are being inserted go in together (`insertMessages`):
    /// two batches at a time, so a batch waits for at most one other.
    let messageInserts: StoreBatcher<MessageInsert, Int64>
    /// `existingAccounts` calls made while others are at the database go together
    /// (`AccountList`).
    let accountLookups: StoreBatcher<AccountList, Set<String>>
    /// `incrementBadges` calls made while others are at the database go together.
    let badgeIncrements: StoreBatcher<AccountList, [String: Int]>

    /// Connects, brings the schema up to date (core, then plugins) and starts the pool.
    ///
    /// - Throws: `StoreError(.unavailable, …)` when the server cannot be reached or the
    ///   migration fails.
    public init(url: String, configuration: Options = .init()) throws {
        self.url = url
        self.clock = configuration.clock
        self.pluginMigrations = configuration.pluginMigrations
        self.writeObserver = configuration.writeObserver
        self.logger = configuration.logger
        self.nodeID = configuration.nodeID
        self.leaseDuration = configuration.leaseDuration
        self.sliceSize = max(1, configuration.sliceSize)
        self.claimPace = configuration.claimPace
        self.acceptedClaims = configuration.claimsAtAccept ? AcceptedClaims() : nil
        do {
            // Closed when it goes out of scope (deinit).
            let connection = try PostgresConnection(url: url)
            try PostgresSchema.migrate(connection, plugins: configuration.pluginMigrations)
            // Half a lease: a node frozen inside a transaction (a flush holding its slice's
            // row) would otherwise keep the row locked until it resumes, and the claim's SKIP
            // LOCKED would pass the slice over long after its lease ended. The server ends
            // such a session in time for the slice to be taken over when its lease ends.
            //
            // JIT off: the gateway's statements are short, and the planner's cost of one can pass
            // `jit_above_cost` on estimates alone (a never-analyzed `apps` table is taken for 430
            // rows, so the claim's per-app walk cost 629,000): compiling it then took 0.3–8.8 s
            // a claim on a loaded 2-core machine, where the statement itself runs in
            // milliseconds — the cluster test's chat backlog filled and a push stalled.
            pool = try PostgresPool(
                url: url, size: max(1, configuration.poolSize),
                idleInTransactionTimeout: configuration.leaseDuration / 2, settings: Self.sessionSettings,
                label: "tuisong-pg", logger: configuration.logger)
        } catch {
            throw Self.storeError(error)
        }
        // One batch at a time: the statement's own cost, whatever its rows (~90 µs beyond a
        // `SELECT 1`'s round trip, beside ~20 µs a row, timed in psql with a statement of its
        // shape), is shared by more rows. At saturation a chat load's batches grew from ~8–10
        // to ~12–13 rows and one node's native rate by 16 % (3,957 · 3,733 → 4,532 · 4,380
        // lines/s, server 152 · 170 → 134 · 139 µs a line, alternated; issue #47). A second
        // batch at the database meanwhile would not have been accepted sooner: the machine was
        // busy.
        messageInserts = StoreBatcher(concurrency: 1, maxBatch: 128) {
            [
                pool, health, writeObserver = configuration.writeObserver, node = configuration.nodeID,
                lease = Self.milliseconds(configuration.leaseDuration)
            ] inserts in
            await Self.insertMessages(inserts) { inserts in
                try await health.noting(timedBy: writeObserver, mapError: Self.storeError) {
                    // One statement, atomic by itself: no BEGIN and COMMIT around it.
                    try await pool.withConnection { conn in
                        try Self.insertMessageRows(conn, inserts, node: node, leaseMilliseconds: lease)
                    }
                }
            }
        }
        accountLookups = StoreBatcher(
            concurrency: 2, maxBatch: 256, maxWeight: AccountList.batchWeight, weight: { $0.accounts.count }
        ) { [pool] lists in
            await Self.batchOrEachAlone(lists) { lists in
                do {
                    return try await pool.withConnection { conn in try AccountList.existing(conn, lists) }
                } catch {
                    throw Self.storeError(error)
                }
            }
        }
        badgeIncrements = StoreBatcher(
            concurrency: 2, maxBatch: 256, maxWeight: AccountList.batchWeight, weight: { $0.accounts.count }
        ) { [pool, health, clock = configuration.clock, writeObserver = configuration.writeObserver] lists in
            await Self.batchOrEachAlone(lists) { lists in
                // One statement, atomic by itself: no BEGIN and COMMIT around it.
                try await health.noting(timedBy: writeObserver, mapError: Self.storeError) {
                    try await pool.withConnection { conn in
                        try AccountList.incrementBadges(
                            PostgresExecutor(conn, prepares: true), lists, now: SQLTime.milliseconds(clock.now))
                    }
                }
            }
        }
    }

    /// Server settings of every pooled session (`PostgresPool`'s `settings`).
    static let sessionSettings: [(name: String, value: String)] = [("jit", "off")]

    /// Whether the database `url` names holds Tuisong's tables (a migration was applied), read
    /// without changing anything: the CLI asks before a command would migrate an empty one.
    ///
    /// - Throws: `StoreError(.unavailable, …)` when the server cannot be reached.
    public static func hasSchema(url: String) throws -> Bool {
        do {
            let connection = try PostgresConnection(url: url)
            let result = try connection.execute("SELECT to_regclass('schema_migrations') IS NOT NULL")
            return result.rows.first?[0].bool ?? false
        } catch {
            throw storeError(error)
        }
    }

    /// `postgresql://host:port/db` without user, password or query: safe to log.
    public var location: String { Self.redacted(url) }

    package static func redacted(_ url: String) -> String {
        guard let scheme = url.range(of: "://") else { return url }
        var rest = url[scheme.upperBound...]
        if let query = rest.firstIndex(of: "?") { rest = rest[..<query] }
        if let at = rest.lastIndex(of: "@") { rest = rest[rest.index(after: at)...] }
        return String(url[..<scheme.upperBound] + rest)
    }

    /// The migrations this store applies, in order.
    public var migrationNames: [String] { PostgresSchema.migrationNames(plugins: pluginMigrations) }

    /// The record of applied migrations (`PostgresSchema.migrate`; `appliedMigrations()` reads
    /// it, `SQLStoreBackend`).
    public var sqlMigrationTable: String { "schema_migrations" }

    /// Closes the pool. Calls after the first do nothing.
    public func close() throws {
        guard !closed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        changes.stop()
        pool.shutdownAndWait()
    }

    // MARK: - Plumbing

    /// Statements outside a transaction (each its own), on a pool connection.
    @discardableResult
    func read<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        do {
            return try await pool.withConnection(body)
        } catch {
            throw Self.storeError(error)
        }
    }

    /// `body` in one transaction: committed when it returns, rolled back when it throws.
    @discardableResult
    func write<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await health.noting(timedBy: writeObserver, mapError: Self.storeError) {
            try await pool.transaction(body)
        }
    }

    public var nowMilliseconds: Int64 { SQLTime.milliseconds(clock.now) }

    /// PostgreSQL's errors in the store's terms; a `StoreError` or cancellation passes through.
    static func storeError(_ error: any Error) -> any Error {
        if error is StoreError || error is CancellationError { return error }
        guard let pg = error as? PostgresError else { return StoreError(.unavailable, String(describing: error)) }
        let text = "PostgreSQL \(pg.sqlState ?? pg.kind.description): \(pg.message)"
        // Class 53 (insufficient resources: disk_full 53100, out of memory, too many
        // connections) and the server going away are not "busy": APIs say which.
        if pg.sqlState == "53100" { return StoreError(.unavailable, text, unavailability: .storageFull) }
        if pg.kind == .connect || pg.kind == .connectionLost || pg.sqlState?.hasPrefix("08") == true
            || pg.sqlState?.hasPrefix("57P") == true
        {
            return StoreError(.unavailable, text, unavailability: .databaseDown)
        }
        switch pg.sqlState {
        case "23503": return StoreError(.notFound, text)  // foreign_key_violation: an unknown parent
        // unique, check, not-null, too long, bad text representation, NUL in text (COPY)
        case "23505", "23514", "23502", "22001", "22P02", "22021": return StoreError(.conflict, text)
        default: return StoreError(.unavailable, text)
        }
    }
}

extension PostgresConnection {
    /// Runs `sql` with `parameters`, preparing it once per connection under a name derived from
    /// the text: the store's fixed statements are parsed once, not on every call. The parameters
    /// are not optional: `run("…")` alone is an `SQLQuery` (`PostgresStore+SQLQuery`), whose
    /// interpolated values are bindings, never text.
    @discardableResult
    func run(_ sql: String, _ parameters: [PostgresValue]) throws -> PostgresResult {
        let name = StatementNames.name(for: sql)
        try prepare(name: name, sql: sql)
        return try executePrepared(name: name, parameters)
    }
}

extension PostgresConnection {
    /// Runs `sql` prepared with its parameters' types (`prepare(name:sql:typedLike:)`), once
    /// per connection for each text and types: a plugin's statements, whose integers must stay
    /// integers (`PostgresExecutor.run`). With `begin`, run in a transaction of its own that
    /// `begin` opens, in one round trip (`executePrepared(name:_:inTransactionOfItsOwn:)`).
    @discardableResult
    func runTyped(_ sql: String, _ parameters: [PostgresValue], inTransactionOfItsOwn begin: String? = nil) throws
        -> PostgresResult
    {
        let name = StatementNames.name(for: "/* types \(Self.parameterTypeKey(parameters)) */ " + sql)
        try prepare(name: name, sql: sql, typedLike: parameters)
        if let begin { return try executePrepared(name: name, parameters, inTransactionOfItsOwn: begin) }
        return try executePrepared(name: name, parameters)
    }
}

/// One name per statement text, for the whole process (`s1`, `s2`, …).
enum StatementNames {
    private static let names = Mutex<[String: String]>([:])

    static func name(for sql: String) -> String {
        names.withLock { names in
            if let name = names[sql] { return name }
            let name = "s\(names.count + 1)"
            names[sql] = name
            return name
        }
    }
}

extension PostgresValue {
    /// `.int` or `.null`.
    init(_ value: Int64?) { self = value.map(PostgresValue.int) ?? .null }
    /// `.text` or `.null`.
    init(_ value: String?) { self = value.map(PostgresValue.text) ?? .null }
}

extension PostgresRow {
    /// The column's integer, 0 for NULL.
    func int64(_ name: String) -> Int64 { self[name]?.int64 ?? 0 }
    func optionalInt64(_ name: String) -> Int64? { self[name]?.int64 }
    /// The column's text, "" for NULL.
    func string(_ name: String) -> String { self[name]?.string ?? "" }
    func optionalString(_ name: String) -> String? { self[name]?.string }
}

extension PostgresStore: GatewayStore {}
