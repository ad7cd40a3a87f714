import Synchronization

/// Counters of the server's connections since start (or the last `resetStatistics()`); each
/// look-alike counts its requests itself.
public struct LookAlikeServerStatistics: Sendable, Equatable {
    /// TCP connections accepted.
    public var connectionsAccepted = 0
    /// Connections currently open.
    public var connectionsOpen = 0
    /// Connections whose TLS handshake failed (or that did not negotiate ALPN h2).
    public var handshakeFailures = 0
    /// Connections closed by the `dropConnectionAfterRequests` fault.
    public var connectionsDropped = 0
    /// GOAWAY frames sent (fault, shutdown or protocol error).
    public var goawaysSent = 0
    /// Streams answered RST_STREAM REFUSED_STREAM (over the advertised stream limit).
    public var refusedStreams = 0
    /// Times a connection raised its stream limit (an answer asked for it: the first valid
    /// token where a service holds a new connection to one stream, or a first request).
    public var streamLimitRaises = 0
    /// Times a connection lowered its stream limit (the `lowerStreamLimitAfterRequests` fault).
    public var streamLimitLowerings = 0
    /// The most request streams open at once on one connection after its client acknowledged
    /// a lowered limit: a client that honours SETTINGS keeps this at or below the new limit.
    public var peakStreamsAfterLowering = 0
    /// Bytes read and dropped from clients after the server shut its side (a GOAWAY sent, the
    /// connection lingering until the client closes): read, they cannot make the kernel reset
    /// the connection.
    public var bytesDrainedWhileLingering = 0
    /// Filler bytes handed to nghttp2 for answers of the endless-answers fault: how far clients
    /// read an answer that never ends before they gave up on it.
    public var endlessAnswerBytes = 0
    /// PING frames received from clients (acknowledgements not counted).
    public var pingsReceived = 0

    public init() {}
}

/// The connection counters, shared by every event loop.
final class ServerRecorder: Sendable {
    private let state = Mutex(LookAlikeServerStatistics())

    var statistics: LookAlikeServerStatistics { state.withLock { $0 } }

    func update(_ change: (inout LookAlikeServerStatistics) -> Void) {
        state.withLock { change(&$0) }
    }

    func resetStatistics() {
        state.withLock { statistics in
            let open = statistics.connectionsOpen
            statistics = LookAlikeServerStatistics()
            // Open connections are a gauge, not a counter: it stays true after a reset.
            statistics.connectionsOpen = open
        }
    }
}
