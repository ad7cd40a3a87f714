internal import CPostgres

#if canImport(Glibc)
    import Glibc
#endif

extension PostgresConnection {
    /// Sends every statement in one round trip (libpq's pipeline mode) and returns one result
    /// each, in order.
    ///
    /// `atomic` (the default) puts one sync point after the last statement: the batch is one
    /// implicit transaction (unless it is inside BEGIN … COMMIT), and when a statement fails the
    /// ones before it are rolled back and the ones after it are not run (their result is an
    /// error saying so). With `atomic: false` each statement is synced on its own, so a failure
    /// affects only that statement.
    ///
    ///     let results = connection.pipeline([
    ///         ("UPDATE slices SET sent = sent + $1 WHERE id = $2", [.int(40), .int(7)]),
    ///         ("INSERT INTO events (slice) VALUES ($1)", [.int(7)]),
    ///     ])
    public func pipeline(_ statements: [(String, [PostgresValue])], atomic: Bool = true) -> [Result<
        PostgresResult, PostgresError
    >] {
        guard !statements.isEmpty else { return [] }
        if let begin = takeDeferredBegin() {
            guard atomic else {
                // Synced one by one, statements after a refused BEGIN would run outside any
                // transaction: the BEGIN goes alone first.
                do throws(PostgresError) {
                    try execute(begin)
                } catch {
                    return statements.map { _ in .failure(error) }
                }
                return send(statements.map { .query($0.0, $0.1) }, atomic: false)
            }
            // One sync point: a refused BEGIN runs none of them.
            var results = send([.query(begin, [])] + statements.map { .query($0.0, $0.1) }, atomic: true)
            let began = results.removeFirst()
            if case .failure(let error) = began { return statements.map { _ in .failure(error) } }
            return results
        }
        return send(statements.map { .query($0.0, $0.1) }, atomic: atomic)
    }

    /// What `send(_:atomic:)` puts in a pipeline: a statement with its parameters, a statement
    /// to prepare under a name (parameter types by OID, 0 for the server to infer), or one
    /// prepared before.
    enum PipelinedStatement {
        case query(String, [PostgresValue])
        case prepare(name: String, sql: String, types: [UInt32])
        case prepared(name: String, [PostgresValue])
    }

    /// `statement` after `begin`, in one round trip with one sync point: the statement does not
    /// run when the BEGIN fails. The statement's result (the BEGIN's error if it failed).
    func afterBeginning(_ begin: String, _ statement: PipelinedStatement) throws(PostgresError) -> PostgresResult {
        let results = send([.query(begin, []), statement], atomic: true)
        if case .failure(let error) = results[0] { throw error }
        return try results[1].get()
    }

    /// Runs `sql` with `parameters` in a transaction of its own that `begin` opens (`BEGIN READ
    /// ONLY`): BEGIN, the statement and COMMIT in one round trip with one sync point, where a
    /// transaction of its own costs two otherwise (`deferBegin`). The statement does not run
    /// when the BEGIN fails; when it fails itself, the transaction is rolled back before the
    /// error is thrown.
    @discardableResult
    public func execute(_ sql: String, _ parameters: [PostgresValue], inTransactionOfItsOwn begin: String)
        throws(PostgresError) -> PostgresResult
    {
        try alone(.query(sql, parameters), in: begin)
    }

    /// `executePrepared(name:_:)` in a transaction of its own, as
    /// `execute(_:_:inTransactionOfItsOwn:)`.
    @discardableResult
    public func executePrepared(name: String, _ parameters: [PostgresValue], inTransactionOfItsOwn begin: String)
        throws(PostgresError) -> PostgresResult
    {
        try alone(.prepared(name: name, parameters), in: begin)
    }

    /// `executePrepared(name:_:inTransactionOfItsOwn:)` with `settings` (`SET LOCAL …`, which
    /// end with the transaction) run after the BEGIN: still one round trip. A setting refused
    /// fails the statement, which then does not run.
    @discardableResult
    public func executePrepared(
        name: String, _ parameters: [PostgresValue], inTransactionOfItsOwn begin: String, settings: [String]
    ) throws(PostgresError) -> PostgresResult {
        try alone(.prepared(name: name, parameters), in: begin, after: settings)
    }

    private func alone(_ statement: PipelinedStatement, in begin: String, after settings: [String] = [])
        throws(PostgresError) -> PostgresResult
    {
        // Inside a transaction (or one deferred) BEGIN would only warn and the COMMIT would end
        // the caller's.
        guard !hasDeferredBegin, !isInTransaction else {
            throw PostgresError(kind: .usage, message: "a statement in a transaction of its own inside a transaction")
        }
        let results = send(
            [.query(begin, [])] + settings.map { .query($0, []) } + [statement, .query("COMMIT", [])], atomic: true)
        // A refused BEGIN or setting: the pipeline stopped there, nothing after it ran.
        for result in results.prefix(1 + settings.count) {
            if case .failure(let error) = result {
                if isConnected, isInTransaction { _ = try? execute("ROLLBACK") }
                throw error
            }
        }
        switch results[1 + settings.count] {
        case .failure(let error):
            // The COMMIT was skipped with the rest of the pipeline: the transaction is open and
            // failed.
            if isConnected, isInTransaction { _ = try? execute("ROLLBACK") }
            throw error
        case .success(let result):
            let commit = try results[2 + settings.count].get()
            if commit.commandTag == "ROLLBACK" {
                throw PostgresError(
                    kind: .server, sqlState: "25P02", message: "the transaction failed and was rolled back at COMMIT")
            }
            return result
        }
    }

    /// `pipeline`'s sending and reading, for any mix of statements.
    func send(_ statements: [PipelinedStatement], atomic: Bool) -> [Result<PostgresResult, PostgresError>] {
        guard PQenterPipelineMode(handle) == 1 else {
            let error = connectionError()
            return statements.map { _ in .failure(error) }
        }
        // Non-blocking while sending: the server answers early statements while later ones are
        // still going out, and a blocking send into a full socket would never read them.
        PQsetnonblocking(handle, 1)
        var sent = 0
        var failure: PostgresError?
        for statement in statements {
            let queued: Int32
            switch statement {
            case .query(let sql, let parameters):
                let encoded = EncodedParameters(parameters)
                queued = encoded.withArrays { types, values, lengths, formats in
                    PQsendQueryParams(handle, sql, Int32(parameters.count), types, values, lengths, formats, 0)
                }
            case .prepare(let name, let sql, let types):
                queued = types.withUnsafeBufferPointer { types in
                    PQsendPrepare(handle, name, sql, Int32(types.count), types.baseAddress)
                }
            case .prepared(let name, let parameters):
                let encoded = EncodedParameters(parameters)
                queued = encoded.withArrays { _, values, lengths, formats in
                    PQsendQueryPrepared(handle, name, Int32(parameters.count), values, lengths, formats, 0)
                }
            }
            guard queued == 1 else {
                failure = connectionError()
                break
            }
            sent += 1
            if !atomic { PQpipelineSync(handle) }
        }
        if atomic || failure != nil { PQpipelineSync(handle) }
        if failure == nil, !flushAll() { failure = connectionError() }
        PQsetnonblocking(handle, 0)

        var results: [Result<PostgresResult, PostgresError>] = []
        results.reserveCapacity(statements.count)
        for _ in 0..<sent {
            if let failure {
                results.append(.failure(failure))
                continue
            }
            guard let result = PQgetResult(handle) else {
                let lost = connectionError()
                failure = lost
                results.append(.failure(lost))
                continue
            }
            do throws(PostgresError) {
                results.append(.success(try decode(result)))
            } catch {
                results.append(.failure(error))
            }
            PQclear(result)
            // Each statement's results end with a null result.
            while let extra = PQgetResult(handle) { PQclear(extra) }
            if !atomic, !readSync() { failure = connectionError() }
        }
        if failure == nil, atomic || sent < statements.count, !readSync() { failure = connectionError() }
        while results.count < statements.count {
            results.append(.failure(failure ?? PostgresError(kind: .usage, message: "statement not sent")))
        }
        PQexitPipelineMode(handle)
        return results
    }

    /// Reads the result a `PQpipelineSync` produces.
    private func readSync() -> Bool {
        guard let result = PQgetResult(handle) else { return false }
        defer { PQclear(result) }
        return PQresultStatus(result) == PGRES_PIPELINE_SYNC
    }

    /// Sends everything libpq has buffered, reading the server's answers meanwhile so neither
    /// side waits on a full socket.
    private func flushAll() -> Bool {
        while true {
            let flushed = PQflush(handle)
            if flushed == 0 { return true }
            if flushed < 0 { return false }
            var descriptor = pollfd(fd: PQsocket(handle), events: Int16(POLLIN | POLLOUT), revents: 0)
            let ready = poll(&descriptor, 1, 60_000)
            if ready < 0 && errno != EINTR { return false }
            if descriptor.revents & Int16(POLLIN) != 0, PQconsumeInput(handle) == 0 { return false }
        }
    }

    /// `COPY … FROM STDIN` in text format: each row's columns in the table's (or the column
    /// list's) order, nil for NULL; escaping is done here. Returns the rows copied.
    ///
    ///     try connection.copyIn(sql: "COPY devices (token, locale) FROM STDIN", rows: [["ab01", "zh_CN"], ["cd02", nil]])
    @discardableResult
    public func copyIn(sql: String, rows: some Sequence<[String?]>) throws(PostgresError) -> Int {
        if let begin = takeDeferredBegin() { try execute(begin) }
        guard let start = PQexec(handle, sql) else { throw connectionError() }
        let status = PQresultStatus(start)
        if status != PGRES_COPY_IN {
            defer { PQclear(start) }
            if status == PGRES_FATAL_ERROR { throw error(from: start) }
            throw PostgresError(kind: .usage, message: "copyIn needs a COPY … FROM STDIN statement")
        }
        PQclear(start)
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 16 + 1024)
        var sendFailed = false
        for row in rows {
            TextDecoding.appendCopyRow(row, to: &buffer)
            if buffer.count >= 1 << 16 {
                if !putCopyData(buffer) {
                    sendFailed = true
                    break
                }
                buffer.removeAll(keepingCapacity: true)
            }
        }
        if !sendFailed, !buffer.isEmpty, !putCopyData(buffer) { sendFailed = true }
        if sendFailed { throw connectionError() }
        guard PQputCopyEnd(handle, nil) == 1 else { throw connectionError() }
        var outcome: Result<PostgresResult, PostgresError> = .failure(connectionError())
        var first = true
        while let result = PQgetResult(handle) {
            if first {
                do throws(PostgresError) {
                    outcome = .success(try decode(result))
                } catch {
                    outcome = .failure(error)
                }
                first = false
            }
            PQclear(result)
        }
        return try outcome.get().affectedRows ?? 0
    }

    private func putCopyData(_ buffer: [UInt8]) -> Bool {
        buffer.withUnsafeBufferPointer { bytes in
            bytes.withMemoryRebound(to: CChar.self) { PQputCopyData(handle, $0.baseAddress, Int32($0.count)) == 1 }
        }
    }
}
