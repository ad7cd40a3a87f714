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
        do {
            tlsContext = try credential.makeTLSContext(
                caFile: caFile, extraCACertificates: extraCACertificates)
        } catch {
            return (false, error.description)
        }
        let outcome = await HTTP2ConnectionCheck.run(
            endpoint: endpoint, tlsContext: tlsContext, label: "apns test", timeout: timeout
        ).mapError(APNsTransportError.init)
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
        do {
            tlsContext = try credential.makeTLSContext(caFile: caFile, extraCACertificates: extraCACertificates)
        } catch {
            return .unavailable(error.description)
        }
        let request = APNsRequest(
            deviceToken: probeDeviceToken, pushType: "alert", topic: topic, priority: 5,
            expiration: 0, payload: Array(#"{"aps":{}}"#.utf8))
        let outcome = await HTTP2ConnectionCheck.run(
            endpoint: endpoint, tlsContext: tlsContext, label: "apns probe", timeout: timeout, request: request,
            authorization: jwt
        ).mapError(APNsTransportError.init)
        switch outcome {
        case .failure(let error):
            return .unavailable(error.description)
        case .success(let answer):
            let status = answer.response?.status
            let reason = answer.response.flatMap { APNsErrorBody(parsing: $0.body).reason } ?? "HTTP \(status ?? 0)"
            switch status ?? 0 {
            case 403: return .refused(reason)
            case 500...: return .unavailable(reason)
            case 0: return .unavailable("no answer to the probe")
            default: return .accepted("provider token accepted (the made-up device token: \(reason))")
            }
        }
    }
}
