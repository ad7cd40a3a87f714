import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongCrypto
import TuisongTransportKit

/// APNs's uploaded `.p8`/`.p12`/PEM files are checked by the form its declaration carries
/// (`TransportDeclaration.uploadedCredentialForm`), not by the gateway: the codes, fields and
/// environments the admin API and the CLI have always answered come from the APNs folder.
@Suite struct APNsCredentialUploadTests {
    let form = APNsPushTransport.declaration.uploadedCredentialForm!
    let now = Date()

    func certificate(_ oids: [String], notAfter: Date? = nil) throws -> CredentialUpload {
        let key = try PrivateKey.generateP256()
        let issued = try Certificate.issue(
            subjectCommonName: "Apple Push Services: com.example.form", subjectUID: "com.example.form",
            subjectAltNames: [], publicKey: key.publicKey, issuer: nil, signingKey: key, isCA: false,
            notBefore: now.addingTimeInterval(-86400), notAfter: notAfter ?? now.addingTimeInterval(86400 * 300),
            extraExtensions: oids.map { ($0, [0x05, 0x00]) })
        return .pem(text: issued.pem() + (try key.pkcs8PEM()), password: nil)
    }

    func refusal(_ upload: CredentialUpload, _ environment: PushEnvironment? = nil, at time: Date? = nil)
        -> UploadRefusal?
    {
        do {
            _ = try form.inspect(upload, environment, time ?? now)
            return nil
        } catch {
            return error
        }
    }

    @Test func aP8KeyServesBothEnvironmentsUnlessToldOne() throws {
        let pem = try PrivateKey.generateP256().pkcs8PEM()
        let both = try form.inspect(.p8(pem: pem, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"), nil, now)
        #expect(
            both
                == InspectedUpload(
                    kind: .p8, environment: .production, servesBothEnvironments: true, teamID: "DEF123GHIJ",
                    keyID: "ABC123DEFG"))
        let sandbox = try form.inspect(.p8(pem: pem, keyID: "ABC123DEFG", teamID: "DEF123GHIJ"), .sandbox, now)
        #expect(sandbox.environment == .sandbox && !sandbox.servesBothEnvironments)
        // Apple shows its ids in capitals; typed in lower case they are the same ids, kept as Apple shows them.
        let typed = try form.inspect(.p8(pem: pem, keyID: "abc123defg", teamID: "def123ghij"), nil, now)
        #expect(typed.keyID == "ABC123DEFG" && typed.teamID == "DEF123GHIJ")
    }

    @Test func refusalsKeepTheirCodesAndFields() throws {
        let pem = try PrivateKey.generateP256().pkcs8PEM()
        #expect(
            refusal(.p8(pem: pem, keyID: "short", teamID: "DEF123GHIJ"))
                == UploadRefusal(
                    "invalid_key_id", "the key id must be the 10 letters and digits Apple shows, got \"short\"",
                    field: "key_id"))
        #expect(refusal(.p8(pem: pem, keyID: "ABC123DEFG", teamID: "DEF-23GHIJ"))?.field == "team_id")
        // A certificate given as a key is told where it goes.
        guard case .pem(let bundle, _) = try certificate([Certificate.applePushProductionOID]) else { return }
        let certificateOnly = try #require(bundle.components(separatedBy: "-----END CERTIFICATE-----").first)
        #expect(
            refusal(
                .p8(pem: certificateOnly + "-----END CERTIFICATE-----\n", keyID: "ABC123DEFG", teamID: "DEF123GHIJ"))
                == UploadRefusal("wrong_kind", "this is a certificate, not a .p8 key: upload it as PEM or .p12"))
        #expect(refusal(.p12(der: [1, 2, 3], password: ""))?.code == "corrupt_file")
        #expect(
            refusal(.pem(text: pem, password: nil))
                == UploadRefusal(
                    "wrong_kind", "this PEM holds only a key; a .p8 key is uploaded with its key id and team id"))
    }

    /// A certificate serves what it names; one naming none must be told; its end is judged by
    /// the clock the gateway hands in.
    @Test func certificatesServeWhatTheyNameUntilTheyExpire() throws {
        let universal = try certificate([Certificate.applePushDevelopmentOID, Certificate.applePushProductionOID])
        let inspected = try form.inspect(universal, .sandbox, now)
        #expect(inspected.servesBothEnvironments && inspected.kind == .pem)
        #expect(inspected.topics.contains("com.example.form") && inspected.expiresAt != nil)
        let development = try form.inspect(try certificate([Certificate.applePushDevelopmentOID]), nil, now)
        #expect(development.environment == .sandbox && !development.servesBothEnvironments)
        #expect(
            refusal(try certificate([]))
                == UploadRefusal(
                    "environment_required",
                    "this certificate does not say which APNs environment it is for: choose sandbox or production",
                    field: "environment"))
        let ending = now.addingTimeInterval(3600)
        let expiring = try certificate([Certificate.applePushProductionOID], notAfter: ending)
        #expect(refusal(expiring, at: now) == nil)
        let expired = try #require(refusal(expiring, at: ending.addingTimeInterval(1)))
        #expect(expired.code == "expired" && expired.message.hasPrefix("the certificate expired on "))
        #expect(expired.message.hasSuffix("Z"))
    }
}
