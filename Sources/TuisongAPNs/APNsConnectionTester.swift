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
                _ = try JWT.apnsProviderToken(
                    keyID: keyID, teamID: teamID, issuedAt: Date(), key: key)
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
        loop.start()
        // The probe is the connection's unretained delegate: this function keeps it alive.
        let probe = LoopBound(ConnectionProbe())
        let outcome = await withCheckedContinuation {
            (continuation: CheckedContinuation<Result<String, APNsTransportError>, Never>) in
            loop.execute {
                let probe = probe.value
                probe.continuation = continuation
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
        switch outcome {
        case .success(let summary):
            var detail = "connected to \(endpoint): \(summary)"
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
}

/// Waits for one connection to become ready or fail, then closes it. Lives on the loop.
private final class ConnectionProbe: APNsConnectionDelegate {
    var continuation: CheckedContinuation<Result<String, APNsTransportError>, Never>?
    var connection: APNsConnection?

    private func finish(_ result: Result<String, APNsTransportError>) {
        continuation?.resume(returning: result)
        continuation = nil
    }

    func connectionBecameReady(_ connection: APNsConnection) {
        let summary =
            "\(connection.tlsVersion ?? "TLS"), ALPN h2, server SETTINGS received "
            + "(max concurrent streams \(connection.remoteMaxConcurrentStreams))"
        finish(.success(summary))
        connection.retire()
    }

    func connection(_ connection: APNsConnection, closed stream: HTTP2Stream, errorCode: UInt32) {}

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
