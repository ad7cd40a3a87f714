import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway
@testable import TuisongSQLiteStore

/// Issue #42: each app's callback user name and key per service, made on first need, sealed at
/// rest, shown to the operator (admin API, `tuisong credential show`), rotated or set to what
/// was typed into the service's console; and the derived ones of an app from before kept.
@Suite(.serialized) struct ReceiptCredentialsEndToEndTests {
    static let publicURL = "https://push.example.com"

    /// A signed Huawei receipt of `tag` for `token`, posted to the app's receipt URL.
    static func postReceipt(
        _ gw: RunningGateway, appID: Int64, tag: String, token: String, userName: String, key: String
    ) async throws -> TestResponse {
        let body = try JSONSerialization.data(
            withJSONObject: [
                "statuses": [
                    [
                        "biTag": tag, "appid": "10086", "token": token, "status": 0, "timestamp": 1_750_000_000_000,
                        "requestId": "r",
                    ]
                ]
            ])
        let signature = ReceiptEndToEndTests.huaweiSignature(
            userName: userName, key: key, timestamp: "1750000000123", nonce: UUID().uuidString.lowercased())
        return try await http(
            "POST", "\(gw.baseURL)/receipts/huawei/\(appID)", body: body, contentType: "application/json",
            headers: ["X-HUAWEI-CALLBACK-ID": signature])
    }

    /// A message of the app sent to one Huawei device, and the tag Huawei would return.
    static func sentMessage(_ gw: RunningGateway, key: String, token: String) async throws -> String {
        let registered = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: ["channel": "huawei"])
        #expect(registered.status == 201, "\(registered.text)")
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [token]], "notification": ["alert": "hi"]])
        let id = try #require(push.jsonObject["message_id"] as? Int)
        _ = try await gw.completed(messageID: Int64(id))
        let sent = try #require(
            gw.mock.receivedAndroidMessages().last { $0.service == .huawei && $0.tokens.contains(token) })
        return try #require(try JSONValue(parsing: sent.body)["message"]?["android"]?["bi_tag"]?.stringValue)
    }

    @Test func theOperatorSeesEachAppsCredentialsAndRotatesOrSetsThem() async throws {
        let (gw, admin) = try await AdminTestClient.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.cred")
        let (otherID, _) = try await gw.createApp(bundleID: "com.example.cred2")
        #expect(try await admin.call("GET", "/apps/\(appID)/receipts").status == 401, "behind the login")
        try await admin.login()

        let view = try await admin.call("GET", "/apps/\(appID)/receipts")
        #expect(view.status == 200, "\(view.text)")
        #expect(view.jsonObject["app_receipts"] as? Bool == false)
        #expect(view.jsonObject["receipts_url"] as? String == "\(Self.publicURL)/api/v1/receipts")
        let services = view.list("services")
        let huawei = try #require(services.first { $0["channel"] as? String == "huawei" })
        let harmony = try #require(services.first { $0["channel"] as? String == "harmony" })
        #expect(huawei["url"] as? String == "\(Self.publicURL)/receipts/huawei/\(appID)")
        #expect(harmony["url"] as? String == "\(Self.publicURL)/receipts/harmony/\(appID)")
        let userName = try #require(huawei["callback_user_name"] as? String)
        let callbackKey = try #require(huawei["callback_key"] as? String)
        #expect(userName == "tuisong\(appID)")
        #expect(callbackKey.count == 32)
        #expect(harmony["callback_key"] as? String != callbackKey, "each service its own key")
        // Made once: shown the same again, and not the pair earlier builds derived.
        let again = try await admin.call("GET", "/apps/\(appID)/receipts").list("services")
        #expect(again.first { $0["channel"] as? String == "huawei" }?["callback_key"] as? String == callbackKey)
        let keys = ReceiptKeys(masterKey: gw.runtime.masterKey)
        #expect(keys.derivedCallbackCredentials(appID: appID, channel: .huawei).key != callbackKey)
        let other = try await admin.call("GET", "/apps/\(otherID)/receipts").list("services")
        #expect(other.first { $0["channel"] as? String == "huawei" }?["callback_key"] as? String != callbackKey)
        // Sealed at rest: the stored bytes are not the key.
        let stored = try #require(
            try await gw.runtime.store.receiptCallbackCredentials(appID: appID).byChannel[.huawei])
        #expect(!String(decoding: stored.encryptedKey, as: UTF8.self).contains(callbackKey))
        for file in ["tuisong.db", "tuisong.db-wal"] {
            let bytes = (try? Data(contentsOf: gw.directory.appending(path: file))) ?? Data()
            #expect(bytes.range(of: Data(callbackKey.utf8)) == nil, "\(file) holds the key in the clear")
        }

        // A receipt signed with what the console shows verifies.
        let tag = try await Self.sentMessage(gw, key: key, token: "huawei-cred-1")
        #expect(
            try await Self.postReceipt(
                gw, appID: appID, tag: tag, token: "huawei-cred-1", userName: userName, key: callbackKey
            ).status == 200)

        // Rotated: the old key stops verifying, the new one verifies.
        let rotated = try await admin.call("POST", "/apps/\(appID)/receipts/huawei/rotate")
        #expect(rotated.status == 200, "\(rotated.text)")
        let newKey = try #require(rotated.jsonObject["callback_key"] as? String)
        #expect(newKey != callbackKey && newKey.count == 32)
        #expect(rotated.jsonObject["callback_user_name"] as? String == userName)
        #expect(
            try await Self.postReceipt(
                gw, appID: appID, tag: tag, token: "huawei-cred-1", userName: userName, key: callbackKey
            ).status == 401)
        #expect(
            try await Self.postReceipt(
                gw, appID: appID, tag: tag, token: "huawei-cred-1", userName: userName, key: newKey
            )
            .status == 200)

        // Set to what the operator typed into AppGallery Connect.
        let set = try await admin.call(
            "PUT", "/apps/\(appID)/receipts/huawei",
            json: ["callback_user_name": "opsUser", "callback_key": "typed-in-AGC-0123456789"])
        #expect(set.status == 200, "\(set.text)")
        #expect(set.jsonObject["callback_user_name"] as? String == "opsUser")
        #expect(
            try await Self.postReceipt(
                gw, appID: appID, tag: tag, token: "huawei-cred-1", userName: "opsUser", key: "typed-in-AGC-0123456789"
            ).status == 200)
        #expect(
            try await Self.postReceipt(
                gw, appID: appID, tag: tag, token: "huawei-cred-1", userName: userName, key: newKey
            )
            .status == 401)
        let invalid = try await admin.call(
            "PUT", "/apps/\(appID)/receipts/huawei", json: ["callback_user_name": "a b", "callback_key": "k"])
        #expect(invalid.status == 400)
        #expect(invalid.errorField == "callback_user_name")
        // Only the services that sign have credentials.
        #expect(try await admin.call("POST", "/apps/\(appID)/receipts/xiaomi/rotate").status == 404)
        #expect(try await admin.call("POST", "/apps/999999/receipts/huawei/rotate").status == 404)
        // The app's own receipts are switched here.
        let on = try await admin.call("PUT", "/apps/\(appID)/receipts", json: ["app_receipts": true])
        #expect(on.status == 200, "\(on.text)")
        #expect(on.jsonObject["app_receipts"] as? Bool == true)
        #expect(try await gw.runtime.store.app(id: appID)?.appReceipts == true)
    }

    /// An app created before credentials were stored (SQLite v17) keeps the pair earlier builds
    /// derived from the master key: a receipt configuration entered then keeps verifying.
    @Test func anAppFromBeforeStoredCredentialsKeepsItsDerivedPair() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-derived-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let key = APIKey.generate()
        let old = try Schema.openDatabase(
            path: directory.appending(path: "tuisong.db").path, through: Schema.v17Identifier)
        try await old.write { db in
            try db.execute(
                sql: """
                    INSERT INTO apps (id, name, bundle_id, api_key_hash, created_at, updated_at)
                    VALUES (1, 'old', 'com.example.old', ?, 0, 0)
                    """, arguments: [APIKey.hash(key)])
        }
        try old.close()
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], directory: directory)
        defer { Task { await gw.stop() } }
        let derived = ReceiptKeys(masterKey: gw.runtime.masterKey).derivedCallbackCredentials(
            appID: 1, channel: .huawei)
        let tag = try await Self.sentMessage(gw, key: key, token: "huawei-old-1")
        #expect(
            try await Self.postReceipt(
                gw, appID: 1, tag: tag, token: "huawei-old-1", userName: derived.userName, key: derived.key
            ).status == 200)
        let shown = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: 1, channel: .huawei)
        #expect(shown == derived)
        // An app made since gets a key of its own.
        let (newID, _) = try await gw.createApp(bundleID: "com.example.new")
        let made = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: newID, channel: .huawei)
        #expect(
            made
                != ReceiptKeys(masterKey: gw.runtime.masterKey).derivedCallbackCredentials(
                    appID: newID, channel: .huawei))
    }

    /// `tuisong credential show` prints what the console shows; `credential receipt-key` rotates.
    @Test func theCLIShowsAndRotatesTheCredentials() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        let (appID, _) = try await gw.createApp(bundleID: "com.example.cli")
        let shown = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: appID, channel: .huawei)
        let directory = gw.directory
        await gw.stop(keepingDirectory: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let env = ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL]
        func runTuisong(_ arguments: [String], environment: [String: String]) throws -> CommandRun {
            try TuisongCommand.run(arguments, in: directory, environment: environment)
        }
        let show = try runTuisong(["credential", "show", "--app", "\(appID)"], environment: env)
        #expect(show.status == 0, "\(show.errors)")
        let printed = try #require(try JSONSerialization.jsonObject(with: Data(show.output.utf8)) as? [String: Any])
        let huawei = try #require((printed["receipts"] as? [[String: String]])?.first { $0["channel"] == "huawei" })
        #expect(huawei["url"] == "\(Self.publicURL)/receipts/huawei/\(appID)")
        #expect(huawei["callback_user_name"] == shown.userName)
        #expect(huawei["callback_key"] == shown.key)

        let rotated = try runTuisong(
            ["credential", "receipt-key", "--app", "\(appID)", "--channel", "huawei", "--rotate"], environment: env)
        #expect(rotated.status == 0, "\(rotated.errors)")
        let after = try #require(try JSONSerialization.jsonObject(with: Data(rotated.output.utf8)) as? [String: String])
        #expect(after["callback_key"] != shown.key && after["callback_key"]?.count == 32)
        let set = try runTuisong(
            [
                "credential", "receipt-key", "--app", "\(appID)", "--channel", "harmony", "--user-name", "ops",
                "--key-env", "AGC_KEY",
            ], environment: env.merging(["AGC_KEY": "typed-key-42"]) { $1 })
        #expect(set.status == 0, "\(set.errors)")
        #expect(set.json["callback_key"] as? String == "typed-key-42")
        let refused = try runTuisong(
            ["credential", "receipt-key", "--app", "\(appID)", "--channel", "xiaomi", "--rotate"], environment: env)
        #expect(refused.status != 0)
    }
}
