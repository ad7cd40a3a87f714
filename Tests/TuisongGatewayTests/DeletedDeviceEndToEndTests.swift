import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #40, item 8, through the running gateway: a push held for want of a credential is not
/// released to the devices deleted while it waited.
@Suite(.serialized) struct DeletedDeviceEndToEndTests {
    /// Not local mode (where an app with no credential is sent through the look-alike's own):
    /// the gateway is pointed at an APNs mock of its own, so the app has no credential at all.
    @Test func aHeldPushIsNotReleasedToDevicesDeletedWhileItWaited() async throws {
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.deleted")
        let mock = try LookAlikeServer(
            configuration: setup.configuration(host: "127.0.0.1", port: 0), certificate: setup.serverCertificate,
            key: setup.serverKey)
        try mock.start()
        defer { mock.shutdown() }
        let directory = FileManager.default.temporaryDirectory.appending(path: "deleted-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let caFile = directory.appending(path: "ca.pem").path
        try setup.writeCAFile(to: caFile)
        let gw = try await TestGateway.start(environment: [
            "TUISONG_APNS_LOCAL_MOCK": "false", "TUISONG_APNS_PRODUCTION_URL": "https://127.0.0.1:\(mock.port)",
            "TUISONG_APNS_CA_FILE": caFile,
        ])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.deleted")
        let deleted = (1...60).map { token($0, prefix: "d0") }
        let kept = (1...3).map { token($0, prefix: "ee") }
        for t in deleted + kept {
            let r = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(t)", key: key, json: ["environment": "production"])
            #expect(r.status == 201)
        }
        // No credential yet: every device's delivery is held.
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        let id = Int64(try #require(push.jsonObject["message_id"] as? Int))
        _ = try await DeliveryWait.until(gw.runtime.engine, id) {
            $0.record.state == .completed && $0.counts.held == deleted.count + kept.count
        }

        for t in deleted {
            #expect(try await http("DELETE", "\(gw.baseURL)/api/v1/devices/\(t)", key: key).status == 204)
        }
        // The .p8 arrives (Apple knows it: the mock is told, as local mode would be).
        let signingKey = try PrivateKey.generateP256()
        mock.trustTokenKey(
            .init(keyID: "DELETED001", teamID: "DELETED001", publicKeyPEM: try signingKey.publicKey.pem()))
        _ = try await gw.runtime.addCredential(
            .p8(pem: try signingKey.pkcs8PEM(), keyID: "DELETED001", teamID: "DELETED001"), appID: appID,
            environment: .production)
        let status = try await DeliveryWait.until(gw.runtime.engine, id) {
            $0.counts.delivered == kept.count && $0.record.completedAt != nil
        }
        #expect(status.counts.skipped == deleted.count && status.counts.held == 0 && status.counts.failed == 0)
        #expect(Set(mock.receivedNotifications().map(\.deviceToken)) == Set(kept))
        #expect(mock.receivedNotifications().count == kept.count)

        let message = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key).jsonObject
        #expect(message["state"] as? String == "completed")
        #expect(message["skips"] as? [String: Int] == ["device_deleted": deleted.count])
    }
}
