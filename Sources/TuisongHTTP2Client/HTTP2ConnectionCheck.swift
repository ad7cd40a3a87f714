import Foundation
public import TuisongCrypto

/// One connection through DNS, TCP, TLS (with the client certificate in the context, if any),
/// ALPN `h2` and the server's first SETTINGS, optionally one request sent on it and its answer
/// awaited, then closed again: what a console's "test connection" needs of a service.
public enum HTTP2ConnectionCheck {
    /// What the check learned.
    public struct Outcome: Sendable {
        /// The connection: TLS version, ALPN, the server's stream limit.
        public var summary: String
        /// The request's answer, when one was sent.
        public var response: HTTP2Response?
    }

    /// Connects to `endpoint` within `timeout`; with `request`, sends it (with `authorization`
    /// handed to its headers) once ready and waits up to `timeout` more for its answer.
    public static func run(
        endpoint: HTTP2Endpoint, tlsContext: TLSContext, label: String, timeout: Duration,
        request: (any HTTP2RequestHead)? = nil, authorization: String? = nil, responseHeaders: [String] = []
    ) async -> Result<Outcome, HTTP2ClientError> {
        let loop: EventLoop
        do {
            loop = try EventLoop(name: label)
        } catch {
            return .failure(error)
        }
        loop.start()
        // The probe is the connection's unretained delegate: this function keeps it alive.
        let probe = LoopBound(ConnectionProbe())
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<Outcome, HTTP2ClientError>, Never>) in
            loop.execute {
                let probe = probe.value
                probe.continuation = continuation
                if let request { probe.request = (request, authorization) }
                probe.keptHeaderNames = responseHeaders
                if request != nil {
                    // The answer may never come: the probe gives up after `timeout` more.
                    loop.schedule(after: timeout * 2) {
                        probe.giveUp(HTTP2ClientError(.timeout, "no answer to the probe within \(timeout * 2)"))
                    }
                }
                let connection = HTTP2Connection(
                    id: 1,
                    settings: HTTP2Connection.Settings(
                        endpoint: endpoint, connectTimeout: timeout, pingInterval: .seconds(3600),
                        pingTimeout: timeout, authorizer: nil, keptResponseHeaders: responseHeaders),
                    loop: loop, tlsContext: tlsContext)
                connection.delegate = probe
                probe.connection = connection
                connection.start()
            }
        }
        await loop.shutdown()
        withExtendedLifetime(probe) {}
        return outcome
    }
}

/// Waits for one connection to become ready or fail (and, with a request, for its answer),
/// then closes it. Lives on the loop.
private final class ConnectionProbe: HTTP2ConnectionDelegate {
    var continuation: CheckedContinuation<Result<HTTP2ConnectionCheck.Outcome, HTTP2ClientError>, Never>?
    var connection: HTTP2Connection?
    /// A request to send once ready, with its authorization.
    var request: (any HTTP2RequestHead, String?)?
    var keptHeaderNames: [String] = []
    private var summary = ""

    private func finish(_ result: Result<HTTP2ConnectionCheck.Outcome, HTTP2ClientError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    func connectionBecameReady(_ connection: HTTP2Connection) {
        summary =
            "\(connection.tlsVersion ?? "TLS"), ALPN h2, server SETTINGS received "
            + "(max concurrent streams \(connection.remoteMaxConcurrentStreams))"
        guard let (request, authorization) = request else {
            finish(.success(.init(summary: summary)))
            connection.retire()
            return
        }
        let deadline = MonotonicTime.now() &+ 10_000_000_000
        let streamID = connection.submit(
            PendingRequest(head: request, deadline: deadline), authorization: authorization)
        if streamID < 0 {
            finish(.failure(HTTP2ClientError(.protocolError, "the probe could not be sent (nghttp2 \(streamID))")))
            connection.retire()
        }
    }

    /// The probe's answer did not come in time.
    func giveUp(_ error: HTTP2ClientError) {
        guard continuation != nil else { return }
        finish(.failure(error))
        connection?.retire()
    }

    func connection(_ connection: HTTP2Connection, closed stream: HTTP2Stream, errorCode: UInt32) {
        guard request != nil else { return }
        if stream.status == 0 {
            finish(
                .failure(
                    HTTP2ClientError(
                        .protocolError,
                        "the probe's stream closed without an answer: "
                            + HTTP2Callbacks.describeHTTP2Error(errorCode))))
        } else {
            finish(.success(.init(summary: summary, response: stream.response(keptHeaderNames: keptHeaderNames))))
        }
        connection.retire()
    }

    func connection(
        _ connection: HTTP2Connection, receivedGoAway lastStreamID: Int32, errorCode: UInt32,
        debugData: String
    ) {
        finish(
            .failure(
                HTTP2ClientError(
                    .protocolError,
                    "the server sent GOAWAY during setup: "
                        + HTTP2Callbacks.describeHTTP2Error(errorCode) + " " + debugData)))
    }

    func connectionMayAcceptStreams(_ connection: HTTP2Connection) {}

    func connection(
        _ connection: HTTP2Connection, closedWith error: HTTP2ClientError?, wasReady: Bool,
        unanswered: [HTTP2Stream]
    ) {
        finish(.failure(error ?? HTTP2ClientError(.connectionLost, "the connection closed during setup")))
        self.connection = nil
    }
}
