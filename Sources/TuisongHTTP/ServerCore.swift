internal import CMicroHTTPD
internal import CTuisongShims
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The state MHD's callbacks reach through their `cls` pointer. `HTTPServer` keeps it alive
/// until `MHD_stop_daemon` has returned, so callbacks take it unretained.
final class ServerCore: Sendable {
    let router: Router
    let isTLS: Bool
    let requestTimeout: Duration
    let requestTimeoutSeconds: Double
    let diagnostics: (@Sendable (String) -> Void)?
    /// `Configuration.maxHeaderBytes`: a larger request line and header block is answered 414
    /// or 431 in the route's dialect.
    let maxHeaderBytes: Int

    /// Requests between MHD's URI-log callback and its request-completed callback.
    let liveExchanges = Atomic<Int>(0)
    /// Set when shutdown begins: answers then carry `Connection: close`.
    let shuttingDown = Atomic<Bool>(false)
    /// Set when shutdown's grace period is over: requests still arriving are answered 503
    /// (as soon as libmicrohttpd lets an answer be queued) instead of being handled.
    let graceOver = Atomic<Bool>(false)
    let pending = PendingExchanges()
    /// Each connection's deadline for its current request (slow clients).
    let connections: ConnectionDeadlines
    /// libmicrohttpd's last few log lines, to explain a failed start.
    let recentLibraryMessages = Mutex<[String]>([])
    /// Whether a chunked request body is taken or answered 411.
    let chunkedRequests: HTTPServer.Configuration.ChunkedRequests

    init(router: Router, configuration: HTTPServer.Configuration) {
        self.router = router
        self.isTLS = configuration.tls != nil
        self.requestTimeoutSeconds = configuration.requestTimeout
        // "No limit" is a deadline a century away.
        self.requestTimeout =
            configuration.requestTimeout > 0
            ? .milliseconds(Int64((configuration.requestTimeout * 1000).rounded(.up)))
            : .seconds(100 * 365 * 24 * 3600)
        self.diagnostics = configuration.diagnostics
        self.maxHeaderBytes = configuration.maxHeaderBytes
        self.chunkedRequests = configuration.chunkedRequests
        self.connections = ConnectionDeadlines(
            receiveTimeout: configuration.receiveTimeout, idleTimeout: configuration.connectionTimeout)
    }

    /// Answers every handler still running past its deadline.
    func expireOverdue(now: ContinuousClock.Instant) {
        for exchange in pending.removeExpired(now: now) {
            exchange.abandon(with: .requestTimeout(seconds: requestTimeoutSeconds))
        }
        let slow = connections.expire(now: now)
        if slow > 0 {
            diagnostics?("closed \(slow) connection(s) that did not deliver a request in time")
        }
    }

    /// Closes the pending set and answers every handler still running, so no connection is
    /// left suspended when the daemon stops.
    func abandonAllPending(with error: HTTPError) {
        for exchange in pending.close() {
            exchange.abandon(with: error)
        }
    }

    func log(_ message: String) {
        recentLibraryMessages.withLock { messages in
            if messages.count == 4 { messages.removeFirst() }
            messages.append(message)
        }
        diagnostics?(message)
    }
}

/// Exchanges whose connection is suspended while their handler runs, with the deadline of
/// each. Lock order: an exchange's `outcome` lock may be held while calling in here; this type
/// never calls into an exchange while holding its own lock.
final class PendingExchanges: Sendable {
    private struct State {
        var entries: [ObjectIdentifier: (exchange: Exchange, deadline: ContinuousClock.Instant)] =
            [:]
        var closed = false
    }

    /// One lock per shard: every suspended request registers on a server thread and
    /// unregisters on the thread that finishes its handler, so a single lock would be
    /// contended by all of them.
    private final class Shard: Sendable {
        let state = Mutex(State())
    }

    private let shards: [Shard] = (0..<16).map { _ in Shard() }

    private func shard(for exchange: Exchange) -> Shard {
        // Objects are 16-byte aligned: drop the constant low bits before picking a shard.
        shards[(ObjectIdentifier(exchange).hashValue >> 4) & (shards.count - 1)]
    }

    /// False once shutdown has closed the set: the caller must answer without suspending.
    func register(_ exchange: Exchange, deadline: ContinuousClock.Instant) -> Bool {
        shard(for: exchange).state.withLock { state in
            guard !state.closed else { return false }
            state.entries[ObjectIdentifier(exchange)] = (exchange, deadline)
            return true
        }
    }

    func unregister(_ exchange: Exchange) {
        _ = shard(for: exchange).state.withLock {
            $0.entries.removeValue(forKey: ObjectIdentifier(exchange))
        }
    }

    func removeExpired(now: ContinuousClock.Instant) -> [Exchange] {
        var expired: [Exchange] = []
        for shard in shards {
            shard.state.withLock { state in
                for (key, entry) in state.entries where entry.deadline <= now {
                    expired.append(entry.exchange)
                    state.entries.removeValue(forKey: key)
                }
            }
        }
        return expired
    }

    /// Closes every shard (later registrations fail) and hands back what was registered.
    func close() -> [Exchange] {
        var all: [Exchange] = []
        for shard in shards {
            shard.state.withLock { state in
                state.closed = true
                all.append(contentsOf: state.entries.values.map(\.exchange))
                state.entries.removeAll()
            }
        }
        return all
    }

    var count: Int {
        shards.reduce(0) { total, shard in total + shard.state.withLock { $0.entries.count } }
    }
}

/// The C entry points MHD calls. Each is a non-capturing `@convention(c)` closure stored in a
/// `static let`, nonisolated, reaching Swift state only through its context pointer.
enum MHDCallbacks {
    /// MHD_OPTION_URI_LOG_CALLBACK: the first sight of a request. Its return value becomes
    /// the request's `*con_cls`; the retain taken here is released in `requestCompleted`.
    static let uriLog:
        @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?, OpaquePointer?) ->
            UnsafeMutableRawPointer? = { cls, uri, connection in
                guard let cls else { return nil }
                let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
                if let connection { core.connections.requestStarted(connection, now: .now) }
                // String(cString:) would silently repair invalid UTF-8; keep the verdict so
                // the request can be answered 400.
                let target = uri.flatMap { String(validatingCString: $0) }
                let exchange = Exchange(
                    core: core, rawTarget: target ?? uri.map { String(cString: $0) } ?? "/",
                    rawTargetIsValid: target != nil)
                core.liveExchanges.add(1, ordering: .relaxed)
                return Unmanaged.passRetained(exchange).toOpaque()
            }

    static let accessHandler: MHD_AccessHandlerCallback = {
        _, connection, _, method, version, uploadData, uploadSize, context in
        guard let connection, let method, let uploadSize, let slot = context?.pointee else {
            return MHD_Result.NO
        }
        let exchange = Unmanaged<Exchange>.fromOpaque(slot).takeUnretainedValue()
        return exchange.step(
            connection: connection, method: method, version: version, uploadData: uploadData,
            uploadSize: uploadSize)
    }

    /// MHD_OPTION_NOTIFY_COMPLETED: the request is over (answered, failed or the daemon is
    /// stopping). Releases the exchange exactly once and clears the slot.
    static let requestCompleted: MHD_RequestCompletedCallback = { _, connection, context, _ in
        guard let context, let slot = context.pointee else { return }
        context.pointee = nil
        let exchange = Unmanaged<Exchange>.fromOpaque(slot).takeRetainedValue()
        exchange.finish()
        if let connection { exchange.core.connections.requestCompleted(connection, now: .now) }
        exchange.core.liveExchanges.subtract(1, ordering: .relaxed)
    }

    /// MHD_OPTION_NOTIFY_CONNECTION: connections come and go (for their deadlines).
    static let notifyConnection: MHD_NotifyConnectionCallback = { cls, connection, _, code in
        guard let cls, let connection else { return }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        if code == .CONNECTION_NOTIFY_STARTED {
            core.connections.opened(connection, socket: tuisong_mhd_connection_socket(connection), now: .now)
        } else {
            core.connections.closed(connection)
        }
    }

    static let collectHeader: MHD_KeyValueIteratorN = { cls, _, key, keySize, value, valueSize in
        guard let cls, let key else { return MHD_Result.YES }
        let collected = cls.assumingMemoryBound(to: CollectedHeaders.self)
        let name = String(
            decoding: UnsafeRawBufferPointer(start: key, count: keySize), as: UTF8.self)
        let text =
            value.map {
                String(decoding: UnsafeRawBufferPointer(start: $0, count: valueSize), as: UTF8.self)
            } ?? ""
        collected.pointee.headers.add(name: name, value: text)
        collected.pointee.places.append(
            FrontDoor.FieldPlace(
                name: UInt(bitPattern: key), value: UInt(bitPattern: value ?? key), valueLength: valueSize))
        return MHD_Result.YES
    }

    /// MHD_OPTION_UNESCAPE_CALLBACK: leave the URL as it is. TuisongHTTP decodes the raw target
    /// itself (per segment, with UTF-8 validation), so MHD's in-place decoding is wasted work
    /// and would cut the URL at a `%00`.
    static let keepEscaped:
        @convention(c) (UnsafeMutableRawPointer?, OpaquePointer?, UnsafeMutablePointer<CChar>?) ->
            Int = { _, _, string in
                string.map { strlen($0) } ?? 0
            }

    static let logger: MHD_LogCallback = { cls, format, arguments in
        guard let cls, let format, let arguments else { return }
        let core = Unmanaged<ServerCore>.fromOpaque(cls).takeUnretainedValue()
        var buffer = [CChar](repeating: 0, count: 512)
        _ = vsnprintf(&buffer, buffer.count, format, arguments)
        var message = string(fromNulTerminated: buffer)
        while message.hasSuffix("\n") { message.removeLast() }
        core.log(message)
    }
}

/// What `collectHeader` gathers: the fields, and where libmicrohttpd keeps each one.
struct CollectedHeaders {
    var headers: HTTPHeaders
    var places: [FrontDoor.FieldPlace]
}

/// The text before the first NUL of a C character buffer.
func string(fromNulTerminated buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
