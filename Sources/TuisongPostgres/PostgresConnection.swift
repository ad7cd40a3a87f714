internal import CPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// One PostgreSQL connection (one libpq `PGconn`).
///
///     let connection = try PostgresConnection(url: "postgresql:///tuisong?host=/run/postgresql")
///     try connection.execute("INSERT INTO t (id, name) VALUES ($1, $2)", [.int(1), "名前"])
///     let rows = try connection.execute("SELECT id, name FROM t").rows
///
/// Every method blocks the calling thread until the server answers: use a connection on a
/// thread of your own, or through `PostgresPool`, which runs them on its own threads so the
/// cooperative pool never waits on the network. Connecting is non-blocking inside (libpq's
/// `PQconnectStartParams`/`PQconnectPoll` under `poll`) so `connectTimeout` bounds it whatever
/// the network does; a pipeline sends in non-blocking mode so a long batch cannot deadlock with
/// the server's answers.
///
/// A connection is used by one thread at a time; it is not `Sendable`.
public final class PostgresConnection {
    let handle: OpaquePointer
    private var prepared: [String: String] = [:]
    /// A BEGIN not sent yet (`deferBegin`): it goes with the next statement, in one round trip.
    private var deferredBegin: String?
    /// Set when the server sent a FATAL while no statement was running (a terminated backend, a
    /// shutdown): libpq passes it to the notice receiver and keeps the status "OK" until it
    /// reads the end of the stream, which may not have arrived yet.
    fileprivate var serverSaidFatal = false

    /// Connects to `url`: a `postgresql://` (or `postgres://`) URL — a directory as host
    /// (`postgresql:///db?host=/run/postgresql&user=tuisong`) means a unix socket — or a libpq
    /// `key=value` connection string. The server's notices (`NOTICE: … skipping`) are dropped.
    public init(url: String, connectTimeout: Duration = .seconds(10)) throws(PostgresError) {
        let started = withCStrings(["dbname", "fallback_application_name"]) { keywords in
            withCStrings([url, "tuisong"]) { values in
                (keywords + [nil]).withUnsafeBufferPointer { keywordList in
                    (values + [nil]).withUnsafeBufferPointer { valueList in
                        PQconnectStartParams(keywordList.baseAddress, valueList.baseAddress, 1)
                    }
                }
            }
        }
        guard let connection = started else {
            throw PostgresError(kind: .connect, message: "libpq could not allocate a connection")
        }
        let deadline = MonotonicClock.now() &+ MonotonicClock.nanoseconds(connectTimeout)
        var state = PGRES_POLLING_WRITING
        while PQstatus(connection) != CONNECTION_BAD {
            if state == PGRES_POLLING_OK { break }
            if state == PGRES_POLLING_FAILED { break }
            let readable = state == PGRES_POLLING_READING
            let ready = Self.waitForSocket(
                PQsocket(connection), events: readable ? Int16(POLLIN) : Int16(POLLOUT), deadline: deadline)
            guard ready else {
                PQfinish(connection)
                throw PostgresError(kind: .connect, message: "connecting timed out after \(connectTimeout)")
            }
            state = PQconnectPoll(connection)
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let message = Self.errorMessage(connection)
            PQfinish(connection)
            throw PostgresError(kind: .connect, message: message)
        }
        handle = connection
        // Replaces libpq's default receiver, which prints notices to stderr. `self` outlives the
        // PGconn (deinit finishes it), so the pointer is unretained.
        PQsetNoticeReceiver(connection, noticeReceiver, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit { PQfinish(handle) }

    /// Whether libpq considers the connection usable (it learns of a break on the next I/O).
    public var isConnected: Bool { PQstatus(handle) == CONNECTION_OK }

    /// The server process serving this connection (`pg_backend_pid()`), for
    /// `pg_terminate_backend` and logs.
    public var backendPID: Int32 { PQbackendPID(handle) }

    /// True between BEGIN and COMMIT/ROLLBACK (also when the transaction has failed); a deferred
    /// BEGIN (`deferBegin`) counts once a statement has carried it to the server.
    public var isInTransaction: Bool { PQtransactionStatus(handle) != PQTRANS_IDLE }

    // MARK: Statements

    /// Runs one statement and returns its rows (text results, decoded by column type).
    /// Without parameters `sql` may hold several statements separated by `;` (a migration),
    /// run as one implicit transaction; the last one's result is returned.
    ///
    /// Integers are sent as `int8`, doubles as `float8`: a function that takes an `int4` needs a
    /// cast (`pg_terminate_backend($1::int)`). Text goes untyped, so the server reads it as the
    /// column needs (`jsonb`, `timestamptz`, `uuid`…).
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue] = []) throws(PostgresError) -> PostgresResult {
        let result: OpaquePointer?
        if parameters.isEmpty {
            // Several statements in one string are the simple protocol's: the BEGIN leads them.
            result = PQexec(handle, takeDeferredBegin().map { "\($0);\n\(sql)" } ?? sql)
        } else if let begin = takeDeferredBegin() {
            return try afterBeginning(begin, .query(sql, parameters))
        } else {
            let encoded = EncodedParameters(parameters)
            result = encoded.withArrays { types, values, lengths, formats in
                PQexecParams(handle, sql, Int32(parameters.count), types, values, lengths, formats, 0)
            }
        }
        return try takeResult(result)
    }

    /// Prepares `sql` under `name` on this connection (types inferred by the server). Preparing
    /// a name again with the same SQL does nothing, so callers may prepare before every use; a
    /// new connection (after a pool replaced a broken one) starts with none.
    public func prepare(name: String, sql: String) throws(PostgresError) {
        try prepare(name: name, sql: sql, typedLike: [])
    }

    /// Prepares `sql` under `name` with the types `execute` sends `parameters` with (integers
    /// `int8`, doubles `float8`, booleans `bool`, bytes `bytea`; text and NULL left to the
    /// server): run prepared, the statement reads its values as it does unprepared. No
    /// parameters: every type inferred (`prepare(name:sql:)`). Preparing a name again with the
    /// same SQL does nothing.
    public func prepare(name: String, sql: String, typedLike parameters: [PostgresValue]) throws(PostgresError) {
        if let existing = prepared[name] {
            guard existing != sql else { return }
            try execute("DEALLOCATE \(quoteIdentifier(name))")
            prepared[name] = nil
        }
        let types = parameters.map(EncodedParameters.type(of:))
        if let begin = takeDeferredBegin() {
            _ = try afterBeginning(begin, .prepare(name: name, sql: sql, types: types))
            prepared[name] = sql
            return
        }
        try takeResult(
            types.withUnsafeBufferPointer { types in
                PQprepare(handle, name, sql, Int32(types.count), types.baseAddress)
            })
        prepared[name] = sql
    }

    /// What `prepare(name:sql:typedLike:)` distinguishes in `parameters`: their types, as a
    /// key (`"20,0,17"`) for naming one prepared statement per text and types.
    public static func parameterTypeKey(_ parameters: [PostgresValue]) -> String {
        parameters.map { String(EncodedParameters.type(of: $0)) }.joined(separator: ",")
    }

    /// Runs the statement prepared under `name` with `parameters`.
    @discardableResult
    public func executePrepared(name: String, _ parameters: [PostgresValue] = []) throws(PostgresError)
        -> PostgresResult
    {
        if let begin = takeDeferredBegin() { return try afterBeginning(begin, .prepared(name: name, parameters)) }
        let encoded = EncodedParameters(parameters)
        let result = encoded.withArrays { _, values, lengths, formats in
            PQexecPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0)
        }
        return try takeResult(result)
    }

    /// Opens a transaction with `begin` (`BEGIN`, `BEGIN ISOLATION LEVEL …`) sent together with
    /// the next statement, in one round trip, rather than on its own: a transaction then costs
    /// one round trip less. With parameters or prepared, the two go in libpq's pipeline mode
    /// with one sync point (that statement does not run when the BEGIN fails); without, the
    /// BEGIN leads the simple query's text. Until a statement is sent the server has no
    /// transaction (`isInTransaction` is false); `endDeferredBegin()` says whether one was opened.
    public func deferBegin(_ begin: String = "BEGIN") {
        deferredBegin = begin
    }

    /// Drops a deferred BEGIN no statement took: true when there was one (no transaction was
    /// opened on the server, so there is nothing to commit or roll back).
    @discardableResult
    public func endDeferredBegin() -> Bool {
        takeDeferredBegin() != nil
    }

    /// Whether a BEGIN waits for the next statement (`deferBegin`).
    var hasDeferredBegin: Bool { deferredBegin != nil }

    /// The deferred BEGIN, once: the statement about to be sent carries it.
    func takeDeferredBegin() -> String? {
        guard let begin = deferredBegin else { return nil }
        deferredBegin = nil
        return begin
    }

    /// Runs `body` between BEGIN and COMMIT; ROLLBACK when it throws (the error is rethrown).
    /// A COMMIT the server turns into a rollback (a statement failed inside and `body` caught
    /// the error) throws SQLSTATE 25P02. The BEGIN goes with `body`'s first statement
    /// (`deferBegin`); a body that sends none opens no transaction.
    ///
    ///     let claimed = try connection.transaction { conn in
    ///         try conn.execute("SELECT id FROM jobs ORDER BY id LIMIT 10 FOR UPDATE SKIP LOCKED").rows
    ///     }
    @discardableResult
    public func transaction<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        deferBegin()
        let value: T
        do {
            value = try body(self)
        } catch {
            if !endDeferredBegin(), isConnected { _ = try? execute("ROLLBACK") }
            throw error
        }
        // Nothing was sent: the server never opened the transaction.
        if endDeferredBegin() { return value }
        let commit = try execute("COMMIT")
        if commit.commandTag == "ROLLBACK" {
            throw PostgresError(
                kind: .server, sqlState: "25P02", message: "the transaction failed and was rolled back at COMMIT")
        }
        return value
    }

    /// `SELECT pg_notify(channel, payload)`: listeners get it when the current transaction commits.
    public func notify(channel: String, payload: String = "") throws(PostgresError) {
        try execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
    }

    /// `name` as a quoted SQL identifier (libpq's `PQescapeIdentifier`): `"my ""table"""`.
    public func quoteIdentifier(_ name: String) -> String {
        let utf8 = Array(name.utf8)
        guard let escaped = PQescapeIdentifier(handle, name, utf8.count) else {
            return "\"" + name.replacing("\"", with: "\"\"") + "\""
        }
        defer { PQfreemem(escaped) }
        return String(cString: escaped)
    }

    // MARK: Health (used by the pool on checkout)

    /// Cheap check that an idle connection is still alive, without a round trip: a connection
    /// with nothing in flight has nothing to read unless the server spoke on its own — most often
    /// a FATAL before it closed the socket (`pg_terminate_backend`, a restart). Anything readable
    /// is consumed; a closed socket turns the status to bad.
    func isHealthyWhenIdle() -> Bool {
        guard PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) == PQTRANS_IDLE, !serverSaidFatal else {
            return false
        }
        var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN), revents: 0)
        // One read may take the FATAL message and leave the end of the stream for the next:
        // read until nothing is left, so the close is seen now rather than by the next statement.
        var reads = 0
        while poll(&descriptor, 1, 0) > 0 && reads < 64 {
            reads += 1
            guard PQconsumeInput(handle) == 1, PQstatus(handle) == CONNECTION_OK else { return false }
            while let notification = PQnotifies(handle) { PQfreemem(notification) }
        }
        return PQstatus(handle) == CONNECTION_OK && !serverSaidFatal
    }

    // MARK: Results

    /// Turns a result into a value or an error, and frees it; nil means libpq had no result at all.
    @discardableResult
    func takeResult(_ result: OpaquePointer?) throws(PostgresError) -> PostgresResult {
        guard let result else { throw connectionError() }
        defer { PQclear(result) }
        return try decode(result)
    }

    func decode(_ result: OpaquePointer) throws(PostgresError) -> PostgresResult {
        let status = PQresultStatus(result)
        switch status {
        case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY, PGRES_SINGLE_TUPLE:
            return Self.decodeRows(result)
        case PGRES_PIPELINE_ABORTED:
            throw PostgresError(
                kind: .server, message: "not run: an earlier statement of the pipeline failed")
        case PGRES_COPY_IN, PGRES_COPY_OUT, PGRES_COPY_BOTH:
            throw PostgresError(kind: .usage, message: "a COPY statement goes through copyIn")
        default:
            throw error(from: result)
        }
    }

    func error(from result: OpaquePointer) -> PostgresError {
        func field(_ code: UInt8) -> String? {
            // PG_DIAG_* are character macros ('C' SQLSTATE, 'M' message…), which Swift does not import.
            PQresultErrorField(result, Int32(code)).map { String(cString: $0) }
        }
        let sqlState = field(UInt8(ascii: "C"))
        let message =
            field(UInt8(ascii: "M"))
            ?? PQresultErrorMessage(result).map { Self.trimmed(String(cString: $0)) } ?? "unknown error"
        let kind: PostgresError.Kind = PQstatus(handle) == CONNECTION_BAD ? .connectionLost : .server
        return PostgresError(
            kind: sqlState == nil && kind == .server ? .usage : kind, sqlState: sqlState,
            message: message.isEmpty ? Self.errorMessage(handle) : message, detail: field(UInt8(ascii: "D")),
            hint: field(UInt8(ascii: "H")), constraint: field(UInt8(ascii: "n")))
    }

    func connectionError() -> PostgresError {
        PostgresError(
            kind: PQstatus(handle) == CONNECTION_BAD ? .connectionLost : .usage, message: Self.errorMessage(handle))
    }

    static func errorMessage(_ connection: OpaquePointer) -> String {
        guard let message = PQerrorMessage(connection) else { return "unknown libpq error" }
        let text = trimmed(String(cString: message))
        return text.isEmpty ? "unknown libpq error" : text
    }

    private static func trimmed(_ text: String) -> String {
        var text = Substring(text)
        while let last = text.last, last.isWhitespace { text.removeLast() }
        return String(text)
    }

    private static func decodeRows(_ result: OpaquePointer) -> PostgresResult {
        let fieldCount = Int(PQnfields(result))
        let rowCount = Int(PQntuples(result))
        let columns = (0..<fieldCount).map { String(cString: PQfname(result, Int32($0))) }
        let types = (0..<fieldCount).map { PQftype(result, Int32($0)) }
        var rows: [PostgresRow] = []
        rows.reserveCapacity(rowCount)
        for row in 0..<Int32(rowCount) {
            var values: [PostgresValue] = []
            values.reserveCapacity(fieldCount)
            for column in 0..<Int32(fieldCount) {
                if PQgetisnull(result, row, column) == 1 {
                    values.append(.null)
                    continue
                }
                let bytes = UnsafeRawBufferPointer(
                    start: PQgetvalue(result, row, column), count: Int(PQgetlength(result, row, column)))
                values.append(TextDecoding.value(bytes, type: types[Int(column)]))
            }
            rows.append(PostgresRow(columns: columns, values: values))
        }
        let tag = PQcmdStatus(result).map { String(cString: $0) } ?? ""
        let affected = PQcmdTuples(result).flatMap { Int(String(cString: $0)) }
        return PostgresResult(columns: columns, rows: rows, commandTag: tag, affectedRows: affected)
    }

    // MARK: Sockets

    /// Waits until `socket` is ready for `events` or `deadline` (monotonic ns) passes; false on timeout.
    static func waitForSocket(_ socket: Int32, events: Int16, deadline: UInt64) -> Bool {
        guard socket >= 0 else { return true }  // libpq reports the failure on the next call
        var descriptor = pollfd(fd: socket, events: events, revents: 0)
        while true {
            let now = MonotonicClock.now()
            guard now < deadline else { return false }
            let milliseconds = Int32(min((deadline - now) / 1_000_000 + 1, 60_000))
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { return true }
        }
    }
}

@available(*, unavailable)
extension PostgresConnection: Sendable {}

/// Drops notices and warnings, and remembers a FATAL (see `serverSaidFatal`). Runs on the thread
/// calling into libpq for this connection, so it may touch the connection.
private let noticeReceiver: PQnoticeReceiver = { context, result in
    guard let context, let result else { return }
    // PG_DIAG_SEVERITY_NONLOCALIZED is the character macro 'V', which Swift does not import.
    guard let severity = PQresultErrorField(result, Int32(UInt8(ascii: "V"))),
        String(cString: severity) == "FATAL" || String(cString: severity) == "PANIC"
    else { return }
    Unmanaged<PostgresConnection>.fromOpaque(context).takeUnretainedValue().serverSaidFatal = true
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): timeouts must not move with the wall clock.
enum MonotonicClock {
    static func now() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) &* 1_000_000_000 &+ UInt64(spec.tv_nsec)
    }

    /// Clamped to 0 below and about a century above.
    static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < 3_000_000_000 else { return 3_000_000_000 * 1_000_000_000 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// C copies of `strings`, alive for the duration of `body`.
func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    let copies = strings.map { strdup($0) }
    defer { for copy in copies { free(copy) } }
    return body(copies.map { UnsafePointer($0) })
}
