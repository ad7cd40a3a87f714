import BaiduProvider
import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongGateway

@Suite(.serialized) struct AdminAppsTests {
    @Test func createShowsTheAPIKeyOnceAndItWorksOnTheNativeAPI() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let created = try await client.call("POST", "/apps", json: ["name": "订单助手", "bundle_id": "com.example.orders"])
        #expect(created.status == 201)
        let key = try #require(created.jsonObject["api_key"] as? String)
        let app = try #require(created.jsonObject["app"] as? [String: Any])
        let id = try #require(app["id"] as? Int)
        #expect(app["name"] as? String == "订单助手")
        #expect(app["devices"] as? Int == 0)

        let registered = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key, json: ["environment": "sandbox"])
        #expect(registered.status == 201)

        let shown = try await client.call("GET", "/apps/\(id)")
        #expect(shown.status == 200)
        #expect(shown.jsonObject["devices"] as? Int == 1)
        #expect(!client.everReceived(APIKey.hash(key)), "not even the key's hash is shown")
        let listed = try await client.call("GET", "/apps")
        #expect(listed.list("apps").count == 1)
        #expect(!String(decoding: listed.body, as: UTF8.self).contains(key))

        let regenerated = try await client.call("POST", "/apps/\(id)/api-key")
        #expect(regenerated.status == 200)
        let newKey = try #require(regenerated.jsonObject["api_key"] as? String)
        #expect(newKey != key)
        let old = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key)
        #expect(old.status == 401, "the old key stops working at once")
        let new = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: newKey)
        #expect(new.status == 200)
    }

    @Test func vendorSecretsAreSealedWriteOnlyAndNeverReturned() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let secret = "baidu-secret-Zq81x"
        let created = try await client.call(
            "POST", "/apps",
            json: [
                "name": "A", "bundle_id": "com.example.a",
                "vendors": ["baidu": ["apikey": "AK-123", "secret_key": secret]],
            ])
        #expect(created.status == 201)
        let id = try #require((created.jsonObject["app"] as? [String: Any])?["id"] as? Int)
        let view = try #require((created.jsonObject["app"] as? [String: Any])?["vendors"] as? [String: Any])
        let baidu = try #require(view["baidu"] as? [String: [String: Any]])
        #expect(baidu["apikey"]?["value"] as? String == "AK-123")
        #expect(baidu["secret_key"]?["set"] as? Bool == true)
        #expect(baidu["secret_key"]?["value"] == nil)

        // At rest: sealed under the master key, bound to this app and vendor.
        let stored = try #require(
            try await gw.runtime.store.app(id: Int64(id))?.vendorSettings["baidu"]?["secret_key_sealed"])
        #expect(stored != secret && !stored.contains(secret))
        let sealer = MasterKeySealer(masterKey: gw.runtime.masterKey)
        #expect(try sealer.open(stored, context: "baidu:app:\(id)") == secret)
        #expect(throws: (any Error).self) { try sealer.open(stored, context: "baidu:app:\(id + 1)") }
        // The Baidu provider reads exactly what the console wrote.
        let saved = try #require(try await gw.runtime.store.app(id: Int64(id)))
        let keys = try #require(try BaiduKeys.of(saved, sealer: sealer))
        #expect(keys.apiKey == "AK-123")
        #expect(keys.secretKey == secret)

        // Editing other fields keeps the secret; "" clears it; a new value replaces it.
        let renamed = try await client.call(
            "PUT", "/apps/\(id)", json: ["name": "B", "vendors": ["baidu": ["apikey": "AK-124"]]])
        #expect(renamed.status == 200)
        #expect(try await gw.runtime.store.app(id: Int64(id))?.vendorSettings["baidu"]?["secret_key_sealed"] == stored)
        let replaced = try await client.call(
            "PUT", "/apps/\(id)", json: ["vendors": ["baidu": ["secret_key": "second-secret-77"]]])
        #expect(replaced.status == 200)
        let resealed = try #require(
            try await gw.runtime.store.app(id: Int64(id))?.vendorSettings["baidu"]?["secret_key_sealed"])
        #expect(try sealer.open(resealed, context: "baidu:app:\(id)") == "second-secret-77")
        let cleared = try await client.call("PUT", "/apps/\(id)", json: ["vendors": ["baidu": ["secret_key": ""]]])
        let clearedView = (cleared.jsonObject["vendors"] as? [String: Any])?["baidu"] as? [String: [String: Any]]
        #expect(clearedView?["secret_key"]?["set"] as? Bool == false)

        _ = try await client.call("GET", "/apps")
        _ = try await client.call("GET", "/apps/\(id)")
        #expect(!client.everReceived(secret))
        #expect(!client.everReceived("second-secret-77"))
        #expect(!client.everReceived(stored), "not even the sealed form leaves the server")
    }

    @Test func validationNamesTheFieldAndUniqueVendorKeysConflict() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let badBundle = try await client.call("POST", "/apps", json: ["name": "x", "bundle_id": "not a bundle id"])
        #expect(badBundle.status == 400)
        #expect(badBundle.errorField == "bundle_id")
        let badAPIKey = try await client.call(
            "POST", "/apps",
            json: ["name": "x", "bundle_id": "com.example.x", "vendors": ["baidu": ["apikey": "has space"]]])
        #expect(badAPIKey.errorField == "vendors.baidu.apikey")
        let badSecret = try await client.call(
            "POST", "/apps",
            json: ["name": "x", "bundle_id": "com.example.x", "vendors": ["baidu": ["secret_key": "a b"]]])
        #expect(badSecret.errorField == "vendors.baidu.secret_key")
        #expect(!String(decoding: badSecret.body, as: UTF8.self).contains("a b"), "not even a refused secret is echoed")
        let noName = try await client.call("POST", "/apps", json: ["name": "  ", "bundle_id": "com.example.x"])
        #expect(noName.errorField == "name")
        let unknownVendor = try await client.call(
            "POST", "/apps", json: ["name": "x", "bundle_id": "com.example.x", "vendors": ["getui": ["k": "v"]]])
        #expect(unknownVendor.status == 400)
        #expect(unknownVendor.errorField == "vendors.getui")
        #expect(try await gw.runtime.store.apps().isEmpty, "a refused create leaves no half-made app")

        let first = try await client.call(
            "POST", "/apps",
            json: ["name": "one", "bundle_id": "com.example.one", "vendors": ["baidu": ["apikey": "AK-unique"]]])
        #expect(first.status == 201)
        let second = try await client.call(
            "POST", "/apps",
            json: ["name": "two", "bundle_id": "com.example.two", "vendors": ["baidu": ["apikey": "AK-unique"]]])
        #expect(second.status == 409)
        #expect(second.errorField == "vendors.baidu.apikey")
        #expect(try await gw.runtime.store.apps().count == 1)
    }

    /// Two apps of one bundle id and one name look alike in the console's list and `app list`
    /// while their keys differ: the second is refused at its name, on create and on edit.
    @Test func aNameIsUniqueWithinABundleID() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let first = try await client.call("POST", "/apps", json: ["name": "Shop", "bundle_id": "com.example.shop"])
        #expect(first.status == 201)
        let firstID = try #require((first.jsonObject["app"] as? [String: Any])?["id"] as? Int)
        let twin = try await client.call("POST", "/apps", json: ["name": " shop", "bundle_id": "com.example.shop"])
        #expect(twin.status == 409)
        #expect(twin.errorField == "name")
        // A code and its values, so the console words it in its own language.
        #expect(twin.errorCode == "app_name_taken")
        let params = (twin.jsonObject["error"] as? [String: Any])?["params"] as? [String: String]
        #expect(params == ["id": String(firstID), "name": "Shop", "bundle_id": "com.example.shop"])
        #expect(
            twin.errorMessage?.contains(#"app \#(firstID) is already named "Shop" for com.example.shop"#) == true,
            "\(String(describing: twin.errorMessage))")
        #expect(try await gw.runtime.store.apps().count == 1)
        let other = try await client.call("POST", "/apps", json: ["name": "Shop", "bundle_id": "com.example.other"])
        #expect(other.status == 201, "another bundle id is another app")
        let otherID = try #require((other.jsonObject["app"] as? [String: Any])?["id"] as? Int)
        let moved = try await client.call("PUT", "/apps/\(otherID)", json: ["bundle_id": "com.example.shop"])
        #expect(moved.status == 409)
        #expect(moved.errorField == "name")
        #expect(try await gw.runtime.store.app(id: Int64(otherID))?.bundleID == "com.example.other")
        let kept = try await client.call(
            "PUT", "/apps/\(firstID)", json: ["name": "Shop", "bundle_id": "com.example.shop"])
        #expect(kept.status == 200, "an app is no namesake of itself")
    }

    @Test func settingsUniqueTogetherRefuseOnlyTheWholePair() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        func easemob(_ name: String, org: String, appName: String) async throws -> TestResponse {
            try await client.call(
                "POST", "/apps",
                json: [
                    "name": name, "bundle_id": "com.example.\(name)",
                    "vendors": [
                        "easemob": [
                            "org": org, "app_name": appName, "client_id": "YXA6-\(name)", "client_secret": "s-\(name)",
                        ]
                    ],
                ])
        }
        #expect(try await easemob("one", org: "acme", appName: "chat").status == 201)
        // Two apps may share an org, not an org and app name together.
        #expect(try await easemob("two", org: "acme", appName: "shop").status == 201)
        let taken = try await easemob("three", org: "acme", appName: "chat")
        #expect(taken.status == 409)
        #expect(taken.errorField == "vendors.easemob.org")
        #expect(String(decoding: taken.body, as: UTF8.self).contains("org + app_name"))
        #expect(try await gw.runtime.store.apps().count == 2)
    }

    @Test func deleteRemovesTheAppAndUnknownIdsAre404() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let created = try await client.call("POST", "/apps", json: ["name": "x", "bundle_id": "com.example.x"])
        let key = try #require(created.jsonObject["api_key"] as? String)
        let id = try #require((created.jsonObject["app"] as? [String: Any])?["id"] as? Int)
        #expect(try await client.call("DELETE", "/apps/\(id)").status == 204)
        #expect(try await client.call("GET", "/apps/\(id)").status == 404)
        #expect(try await client.call("DELETE", "/apps/\(id)").status == 404)
        #expect(try await client.call("GET", "/apps/abc").status == 404)
        let native = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key)
        #expect(native.status == 401)
    }

    @Test func vendorSchemaListsEveryVendorWithSecretsMarked() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let schema = try await client.call("GET", "/vendors")
        let vendors = schema.list("vendors")
        // Every registered provider that declares settings, in registry order.
        let declaring = ProviderRegistry.providers.filter { !$0.settings.isEmpty }.map { $0.name }
        #expect(vendors.compactMap { $0["vendor"] as? String } == declaring)
        let baidu = vendors.first { $0["vendor"] as? String == "baidu" }
        #expect(baidu?["label"] as? [String: String] == ["en": "Baidu Cloud Push", "zh": "百度云推送"])
        let baiduFields = baidu?["fields"] as? [[String: Any]] ?? []
        #expect(
            baiduFields.compactMap { $0["key"] as? String } == ["apikey", "secret_key", "app_id", "android_channel"])
        #expect(baiduFields.first { $0["key"] as? String == "secret_key" }?["secret"] as? Bool == true)
        #expect(baiduFields.first { $0["key"] as? String == "apikey" }?["secret"] as? Bool == false)
        #expect(baiduFields.first { $0["key"] as? String == "apikey" }?["unique"] as? Bool == true)
        #expect(baiduFields.first { $0["key"] as? String == "app_id" }?["required"] as? Bool == false)
        #expect(
            (baiduFields.first { $0["key"] as? String == "apikey" }?["label"] as? [String: String])?["zh"]
                == "API Key（apikey）")
    }
}
