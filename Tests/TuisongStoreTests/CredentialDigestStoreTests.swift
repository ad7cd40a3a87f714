import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// A credential serving both APNs environments (#41 item 5) and an upload repeated (#40 item
/// 10), the same on both databases.
@Suite("Credentials for both environments, repeated uploads")
struct CredentialDigestStoreTests {
    @Test("A credential for both environments serves each; one for one serves that one", arguments: Backend.allCases)
    func bothEnvironments(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let key = try await store.addCredential(
                NewCredential(
                    appID: app.id, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                    keyID: "KEY1234567",
                    subject: nil, topics: [], expiresAt: nil, encryptedSecret: [1], servesBothEnvironments: true))
            #expect(key.servesBothEnvironments)
            #expect(key.environmentName == "both")
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .sandbox)?.id == key.id)
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id == key.id)

            // A newer certificate for production serves production; the key still serves sandbox.
            let certificate = try await store.addCredential(
                NewCredential(
                    appID: app.id, channel: .apns, kind: .p12, environment: .production, teamID: nil, keyID: nil,
                    subject: "CN=x",
                    topics: [], expiresAt: nil, encryptedSecret: [2]))
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id
                    == certificate.id)
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .sandbox)?.id == key.id)
            #expect(try await store.credential(id: certificate.id)?.servesBothEnvironments == false)
        }
    }

    @Test("An upload with a digest already stored adds nothing and answers the first", arguments: Backend.allCases)
    func repeatedUploads(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let other = try await makeApp(store, "other")
            func apns(_ appID: Int64, _ digest: String?, secret: UInt8) -> NewCredential {
                NewCredential(
                    appID: appID, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                    keyID: "KEY1234567",
                    subject: nil, topics: [], expiresAt: nil, encryptedSecret: [secret], servesBothEnvironments: true,
                    secretDigest: digest)
            }
            let first = try await store.addCredential(apns(app.id, "d1", secret: 1))
            let again = try await store.addCredential(apns(app.id, "d1", secret: 2))
            #expect(again == first, "the first is answered, its sealed secret unchanged")
            #expect(try await store.credential(appID: app.id, secretDigest: "d1") == first)
            #expect(try await store.credential(appID: app.id, secretDigest: "d2") == nil)
            // Another app's, and uploads with no digest (older rows), are each their own.
            #expect(try await store.addCredential(apns(other.id, "d1", secret: 3)).id != first.id)
            let plain1 = try await store.addCredential(apns(app.id, nil, secret: 4))
            let plain2 = try await store.addCredential(apns(app.id, nil, secret: 4))
            #expect(plain1.id != plain2.id)
            #expect(try await store.credentials(appID: app.id).count == 3)

            func huawei(_ digest: String?, secret: UInt8) -> NewChannelCredential {
                NewChannelCredential(
                    appID: app.id, channel: .huawei, vendorAppID: "10086", clientID: "10086", encryptedSecret: [secret],
                    secretDigest: digest)
            }
            let channel = try await store.addChannelCredential(huawei("c1", secret: 1))
            #expect(try await store.addChannelCredential(huawei("c1", secret: 2)) == channel)
            #expect(try await store.channelCredential(appID: app.id, secretDigest: "c1") == channel)
            #expect(try await store.addChannelCredential(huawei("c2", secret: 2)).id != channel.id)
            #expect(try await store.formCredentials(appID: app.id).count == 2)
            // One table: the uploaded credentials beside the form's.
            #expect(try await store.channelCredentials(appID: app.id).count == 5)
        }
    }
}
