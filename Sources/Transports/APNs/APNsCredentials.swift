import Foundation
import Logging
import TuisongAPNs
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

/// The stored credentials as the pools authenticate with them: each file opened by the
/// gateway's opener (its master key) and parsed here, where APNs's shapes are known.
struct APNsCredentialFiles: APNsCredentialSource {
    let opener: any CredentialFileOpener

    func material(_ record: CredentialRecord) throws -> APNsCredentialMaterial {
        switch try opener.file(of: record) {
        case .p8(let pem):
            guard let keyID = record.keyID, let teamID = record.teamID else {
                throw APNsSetupError("", "credential \(record.id) lacks its key id or team id")
            }
            return .token(key: try PrivateKey(pem: pem), keyID: keyID, teamID: teamID)
        case .p12(let der, let password):
            let parsed = try PKCS12.parse(der, password: password)
            return .certificate(certificate: parsed.certificate, key: parsed.key, chain: parsed.chain)
        case .pem(let text, let password):
            let parsed = try PEMBundle.parse(text, password: password)
            guard let key = parsed.key else { throw APNsSetupError("", "credential \(record.id) has no key") }
            return .certificate(certificate: parsed.certificate, key: key, chain: parsed.chain)
        }
    }
}

/// Why the APNs transport cannot be made, or a stored credential not used: the config key it is
/// about (`apns.production_url`; empty when none), in the words the gateway's config errors use.
struct APNsSetupError: Error, Sendable, CustomStringConvertible {
    var key: String
    var message: String

    init(_ key: String, _ message: String) {
        self.key = key
        self.message = message
    }

    var description: String { key.isEmpty ? message : "config: \(key): \(message)" }
}

extension APNsPushTransport {
    /// A `.p8` key's provider token, asked about with one push to a made-up device token of
    /// `topic` (nothing reaches a device); nil for a certificate (its TLS handshake is the
    /// check). Throws when the key cannot be opened.
    func probe(_ record: CredentialRecord, topic: String, timeout: Duration) async throws -> CredentialProbe? {
        guard record.kind == .p8 else { return nil }
        let material = try credentials.material(record)
        return await probe(material, environment: record.environment, topic: topic, timeout: timeout)
    }

    private func probe(
        _ material: APNsCredentialMaterial, environment: PushEnvironment, topic: String,
        timeout: Duration
    ) async -> CredentialProbe {
        switch await APNsConnectionTester.probeToken(
            endpoint: endpoints.endpoint(environment), credential: material, topic: topic, caFile: endpoints.caFile,
            extraCACertificates: endpoints.extraCACertificates, timeout: timeout)
        {
        case .accepted(let detail): return .accepted(detail)
        case .refused(let reason): return .refused(reason)
        case .unavailable(let reason): return .unavailable(reason)
        }
    }

    /// The console's "test connection": one connection with the stored credential and, for a
    /// `.p8` key given a `topic`, a probe of its provider token, told in APNs's words.
    func testConnection(_ record: CredentialRecord, topic: String?, timeout: Duration) async -> ConnectionTest {
        let endpoint = endpoints.endpoint(record.environment)
        let material: APNsCredentialMaterial
        do {
            material = try credentials.material(record)
        } catch {
            // Never the secret: the error names the credential and what failed.
            return ConnectionTest(
                ok: false, detail: "the stored credential cannot be opened: \(type(of: error))", endpoint: "\(endpoint)"
            )
        }
        let result = await APNsConnectionTester.test(
            endpoint: endpoint, credential: material, caFile: endpoints.caFile,
            extraCACertificates: endpoints.extraCACertificates, timeout: timeout)
        var test = ConnectionTest(ok: result.ok, detail: result.detail, endpoint: "\(endpoint)")
        // A token key's connection works whatever the key: APNs judges the provider token on a
        // push, so the test asks with one (a made-up device token) and tells what APNs said.
        guard result.ok, record.kind == .p8, let topic else { return test }
        let probe = await probe(material, environment: record.environment, topic: topic, timeout: timeout)
        logger.info("probed a token key", metadata: ["credential": "\(record.id)", "result": "\(probe)"])
        // The connection's own words stay; the note that APNs judges the token later goes.
        let connected = result.detail.components(separatedBy: "; provider token").first ?? result.detail
        switch probe {
        case .accepted(let detail):
            test.detail = "\(connected); APNs accepted the provider token: \(detail)"
        case .refused(let reason):
            test.ok = false
            test.detail = "APNs refused the provider token: \(reason) (check the Key ID, the Team ID and the key)"
            test.refusal = reason
        case .unavailable(let reason):
            test.detail = "\(connected); APNs did not judge the provider token (\(reason)): the first push will"
        }
        return test
    }

    /// Local mode: the look-alike learns a stored `.p8` key's public key, as Apple trusts every
    /// key of a team. A certificate needs nothing: the look-alike trusts its CA's certificates.
    func trust(_ record: CredentialRecord, on local: LocalLookAlike) {
        guard record.kind == .p8, case .token(let key, let keyID, let teamID)? = try? credentials.material(record),
            let publicKey = try? key.publicKey.pem()
        else { return }
        do {
            try local.trust(
                ChannelCredential(
                    id: record.id, channel: .apns, vendorAppID: teamID, clientID: keyID, secret: Array(publicKey.utf8)))
        } catch {
            logger.warning(
                "local mode: the look-alike cannot learn a stored key",
                metadata: ["credential": "\(record.id)", "error": "\(error)"])
        }
    }
}
