import Foundation
public import TuisongCrypto

/// The console's "test connection": one connection through DNS, TCP, TLS (with the client
/// certificate, if any), ALPN `h2` and the server's first SETTINGS, then closed again.
///
/// Token credentials are checked locally (a provider token is signed) but APNs only judges a
/// token on a push, so that is what `detail` says.
public enum APNsConnectionTester {
    public static func test(
        endpoint: APNsEndpoint, credential: APNsCredentialMaterial, caFile: String? = nil,
        extraCACertificates: [Certificate] = [], timeout: Duration = .seconds(10)
    ) async -> (ok: Bool, detail: String) {
        var tokenNote = ""
        if case .token(let key, let keyID, let teamID) = credential {
            do {
                _ = try JWT.es256Token(
                    keyID: keyID, issuer: teamID, issuedAt: Date(), key: key)
            } catch {
                return (false, "cannot sign a provider token with key \(keyID): \(error.message)")
            }
            tokenNote =
                "; provider token for key \(keyID), team \(teamID) signed locally — APNs only "
                + "checks it on the first push"
        }
        let tlsContext: TLSContext
        let loop: EventLoop
        do {
            tlsContext = try credential.makeTLSContext(
                caFile: caFile, extraCACertificates: extraCACertificates)
            loop = try EventLoop(name: "apns test")
        } catch {
            return (false, error.description)
        }
        let outcome = await connect(
            endpoint: endpoint, tlsContext: tlsContext, loop: loop, timeout: timeout, request: nil)
        switch outcome {
        case .success(let answer):
            var detail = "connected to \(endpoint): \(answer.summary)"
            if case .certificate(let certificate, _, _) = credential {
                detail +=
                    "; client certificate \(certificate.subject) accepted in the TLS "
                    + "handshake — APNs confirms it on the first push"
            }
            return (true, detail + tokenNote)
        case .failure(let error):
            return (false, error.description)
        }
    }

    /// The made-up device token of the probe: no device has it (the look-alike answers it
    /// BadDeviceToken and does not count it as sent).
    public static let probeDeviceToken = String(repeating: "f", count: 64)

    /// What APNs said of a token credential's provider token.
    public enum TokenProbe: Sendable, Hashable {
        /// APNs judged the request past the token (a made-up device token is `BadDeviceToken`).
        case accepted(String)
        /// APNs refused the provider token (`403`, `InvalidProviderToken` and the like): its reason.
        case refused(String)
        /// APNs could not be asked (no connection, a timeout, a 5xx).
        case unavailable(String)
    }

    /// Asks APNs about a token credential (a `.p8` key): one push to a made-up device token with
    /// a provider token signed by the key. APNs checks the provider token before the device
    /// token, so `403` means the key, key id or team id is wrong, and `BadDeviceToken` means
    /// they are right. Nothing reaches a device. A certificate has nothing to probe: its TLS
    /// handshake is `test`'s business.
    public static func probeToken(
        endpoint: APNsEndpoint, credential: APNsCredentialMaterial, topic: String, caFile: String? = nil,
        extraCACertificates: [Certificate] = [], timeout: Duration = .seconds(10)
    ) async -> TokenProbe {
        guard case .token(let key, let keyID, let teamID) = credential else {
            return .unavailable("a certificate is checked in the TLS handshake, not by a push")
        }
        let jwt: String
        do {
            jwt = try JWT.es256Token(keyID: keyID, issuer: teamID, issuedAt: Date(), key: key)
        } catch {
            return .refused("cannot sign a provider token with key \(keyID): \(error.message)")
        }
        let tlsContext: TLSContext
        let loop: EventLoop
        do {
            tlsContext = try credential.makeTLSContext(caFile: caFile, extraCACertificates: extraCACertificates)
            loop = try EventLoop(name: "apns probe")
        } catch {
            return .unavailable(error.description)
        }
        let request = APNsRequest(
            deviceToken: probeDeviceToken, pushType: "alert", topic: topic, priority: 5,
            expiration: 0, payload: Array(#"{"aps":{}}"#.utf8))
        let outcome = await connect(
            endpoint: endpoint, tlsContext: tlsContext, loop: loop, timeout: timeout, request: (request, jwt))
        switch outcome {
        case .failure(let error):
            return .unavailable(error.description)
        case .success(let answer):
            let reason = answer.reason ?? "HTTP \(answer.status ?? 0)"
            switch answer.status ?? 0 {
            case 403: return .refused(reason)
            case 500...: return .unavailable(reason)
            case 0: return .unavailable("no answer to the probe")
            default: return .accepted("provider token accepted (the made-up device token: \(reason))")
            }
        }
    }

    /// One connection to `endpoint`; with `request`, that request sent once it is ready and its
    /// answer awaited. The loop is started here and shut down before returning.
    private static func connect(
        endpoint: APNsEndpoint, tlsContext: TLSContext, loop: EventLoop, timeout: Duration,
        request: (APNsRequest, String)?
    ) async -> Result<ProbeAnswer, APNsTransportError> {
        loop.start()
        // The probe is the connection's unretained delegate: this function keeps it alive.
        let probe = LoopBound(ConnectionProbe())
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<ProbeAnswer, APNsTransportError>, Never>) in
            loop.execute {
                let probe = probe.value
                probe.continuation = continuation
                probe.request = request
                if request != nil {
                    // The answer may never come: the probe gives up after `timeout` more.
                    loop.schedule(after: timeout * 2) {
                        probe.giveUp(
                            APNsTransportError(.timeout, "no answer to the probe within \(timeout * 2)"))
                    }
                }
                let connection = APNsConnection(
                    id: 1,
                    settings: APNsConnection.Settings(
                        endpoint: endpoint, connectTimeout: timeout, pingInterval: .seconds(3600),
                        pingTimeout: timeout, usesTokenAuthentication: false),
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

/// What a connection test learned: the connection's summary, and a probe request's answer.
private struct ProbeAnswer: Sendable {
    var summary: String
    var status: Int?
    var reason: String?
}

/// Waits for one connection to become ready or fail (and, with a request, for its answer),
/// then closes it. Lives on the loop.
private final class ConnectionProbe: APNsConnectionDelegate {
    var continuation: CheckedContinuation<Result<ProbeAnswer, APNsTransportError>, Never>?
    var connection: APNsConnection?
    /// A request to send once ready, with its provider token.
    var request: (APNsRequest, String)?
    private var summary = ""

    private func finish(_ result: Result<ProbeAnswer, APNsTransportError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    func connectionBecameReady(_ connection: APNsConnection) {
        summary =
            "\(connection.tlsVersion ?? "TLS"), ALPN h2, server SETTINGS received "
            + "(max concurrent streams \(connection.remoteMaxConcurrentStreams))"
        guard let (request, jwt) = request else {
            finish(.success(ProbeAnswer(summary: summary)))
            connection.retire()
            return
        }
        let deadline = MonotonicTime.now() &+ 10_000_000_000
        let streamID = connection.submit(PendingRequest(request: request, deadline: deadline), authorization: jwt)
        if streamID < 0 {
            finish(.failure(APNsTransportError(.protocolError, "the probe could not be sent (nghttp2 \(streamID))")))
            connection.retire()
        }
    }

    /// The probe's answer did not come in time.
    func giveUp(_ error: APNsTransportError) {
        guard continuation != nil else { return }
        finish(.failure(error))
        connection?.retire()
    }

    func connection(_ connection: APNsConnection, closed stream: HTTP2Stream, errorCode: UInt32) {
        guard request != nil else { return }
        if stream.status == 0 {
            finish(
                .failure(
                    APNsTransportError(
                        .protocolError,
                        "the probe's stream closed without an answer: "
                            + HTTP2Callbacks.describeHTTP2Error(errorCode))))
        } else {
            let body = APNsErrorBody(parsing: stream.body)
            finish(.success(ProbeAnswer(summary: summary, status: stream.status, reason: body.reason)))
        }
        connection.retire()
    }

    func connection(
        _ connection: APNsConnection, receivedGoAway lastStreamID: Int32, errorCode: UInt32,
        debugData: String
    ) {
        finish(
            .failure(
                APNsTransportError(
                    .protocolError,
                    "the server sent GOAWAY during setup: "
                        + HTTP2Callbacks.describeHTTP2Error(errorCode) + " " + debugData)))
    }

    func connectionMayAcceptStreams(_ connection: APNsConnection) {}

    func connection(
        _ connection: APNsConnection, closedWith error: APNsTransportError?, wasReady: Bool,
        unanswered: [HTTP2Stream]
    ) {
        finish(
            .failure(
                error ?? APNsTransportError(.connectionLost, "the connection closed during setup")))
        self.connection = nil
    }
}
