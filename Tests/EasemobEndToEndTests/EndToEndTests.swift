import Foundation
import Testing
import TuisongCore
import TuisongGateway
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import EasemobProvider

/// Easemob's REST API over real HTTP against a real gateway (`GatewayRuntime`, the delivery
/// engine, the APNs pool over TLS + HTTP/2) and the bundled APNs mock.
@Suite(.serialized) struct EndToEndTests {
    @Test func tokensUsersAndTheErrorDialect() async throws {
        let clock = ManualClock(Date())
        try await EasemobGateway.with(clock: clock) { gw in
            // No token, `Bearer None`, a forged token: 401 unauthorized.
            let anonymous = try await gw.call("POST", "/users", ["username": "x", "password": "p"])
            #expect(anonymous.status == 401 && anonymous.error == "unauthorized")
            let none = try await gw.call("POST", "/users", ["username": "x"], headers: ["Authorization": "Bearer None"])
            #expect(none.status == 401 && none.error == "unauthorized")
            let forged = try await gw.call("GET", "/users", token: "YWMtZm9yZ2Vk.AAAA")
            #expect(forged.status == 401 && forged.error == "unauthorized")

            let wrong = try await gw.call(
                "POST", "/token",
                ["grant_type": "client_credentials", "client_id": EasemobGateway.clientID, "client_secret": "nope"])
            #expect(wrong.status == 400 && wrong.error == "invalid_grant")
            let granted = try await gw.call(
                "POST", "/token",
                [
                    "grant_type": "client_credentials", "client_id": EasemobGateway.clientID,
                    "client_secret": EasemobGateway.clientSecret, "ttl": "1024000",
                ])
            #expect(granted.jsonObject["expires_in"] as? Int == 1_024_000)
            #expect((granted.jsonObject["application"] as? String)?.count == 36)
            let token = try #require(granted.jsonObject["access_token"] as? String)

            // ttl 1: good now, expired a second later.
            let short = try await gw.appToken(ttl: 1)
            #expect(try await gw.call("GET", "/users", token: short).status == 200)
            clock.advance(by: 1.1)
            let expired = try await gw.call("GET", "/users", token: short)
            #expect(expired.status == 401 && expired.error == "unauthorized")
            #expect((expired.jsonObject["error_description"] as? String)?.contains("expired") == true)

            // Register one, then a list with a duplicate.
            let alice = try await gw.call(
                "POST", "/users", ["username": "Alice", "password": "p1", "nickname": "艾"], token: token)
            #expect(alice.status == 200 && alice.jsonObject["action"] as? String == "post")
            #expect(alice.entities.first?["username"] as? String == "alice")
            #expect(
                alice.jsonObject["organization"] as? String == "acme"
                    && alice.jsonObject["applicationName"] as? String == "chat")
            #expect(alice.jsonObject["path"] as? String == "/users")
            #expect((alice.jsonObject["uri"] as? String)?.hasSuffix("/acme/chat/users") == true)
            let again = try await gw.call("POST", "/users", ["username": "alice", "password": "p"], token: token)
            #expect(again.status == 400 && again.error == "duplicate_unique_property_exists")
            let batch = try await gw.call(
                "POST", "/users",
                [
                    ["username": "bob", "password": "p2"], ["username": "carol", "password": "p3"],
                    ["username": "alice", "password": "x"],
                ],
                token: token)
            #expect(batch.entities.map { $0["username"] as? String } == ["bob", "carol"])
            #expect(((batch.jsonObject["data"] as? [[String: Any]])?.first?["username"] as? String) == "alice")

            // Listing in pages.
            let page1 = try await gw.call("GET", "/users?limit=2", token: token)
            #expect(page1.entities.count == 2 && page1.jsonObject["count"] as? Int == 2)
            let cursor = try #require(page1.jsonObject["cursor"] as? String)
            let page2 = try await gw.call("GET", "/users?limit=2&cursor=\(cursor)", token: token)
            #expect(page2.entities.count == 1 && page2.jsonObject["cursor"] == nil)

            // Profile and legacy push fields, echoed.
            let updated = try await gw.call(
                "PUT", "/users/alice",
                [
                    "nickname": "小艾", "notification_display_style": 1, "notification_no_disturbing": true,
                    "notification_no_disturbing_start": "22", "notification_no_disturbing_end": "7",
                ], token: token)
            let entity = try #require(updated.entities.first)
            #expect(entity["nickname"] as? String == "小艾" && entity["notification_display_style"] as? Int == 1)
            #expect(entity["notification_no_disturbing"] as? Bool == true)
            #expect(entity["notification_no_disturbing_start"] as? Int == 22)
            #expect(entity["notification_no_disturbing_end"] as? Int == 7)
            let badStyle = try await gw.call("PUT", "/users/alice", ["notification_display_style": 3], token: token)
            #expect(badStyle.status == 400 && badStyle.error == "illegal_argument")
            let badJSON = try await gw.call("PUT", "/users/alice", token: token, raw: Data(#"{"nickname"="x"}"#.utf8))
            #expect(badJSON.status == 400 && badJSON.error == "json_parse")
            #expect(
                try await gw.call("GET", "/users/alice", token: token).entities.first?["nickname"] as? String == "小艾")

            // A user's own token: only for its own binding.
            let login = try await gw.call(
                "POST", "/token", ["grant_type": "password", "username": "bob", "password": "p2"])
            #expect((login.jsonObject["user"] as? [String: Any])?["username"] as? String == "bob")
            #expect(login.jsonObject["expires_in"] as? Int ?? 0 > 0)
            let bobToken = try #require(login.jsonObject["access_token"] as? String)
            let badLogin = try await gw.call(
                "POST", "/token", ["grant_type": "password", "username": "bob", "password": "x"])
            #expect(badLogin.status == 400 && badLogin.error == "invalid_grant")
            #expect(try await gw.bind(bobToken, user: "bob", device: "d1", apnsToken: apnsToken(1)).status == 200)
            #expect(try await gw.bind(bobToken, user: "alice", device: "d1", apnsToken: apnsToken(2)).status == 401)
            #expect(try await gw.call("GET", "/users", token: bobToken).status == 401)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).entities.count == 1)

            // Delete; then 404 in Easemob's words, also for a path that does not exist.
            #expect(
                try await gw.call("DELETE", "/users/carol", token: token).entities.first?["username"] as? String
                    == "carol")
            let gone = try await gw.call("GET", "/users/carol", token: token)
            #expect(gone.status == 404 && gone.error == "service_resource_not_found")
            let nowhere = try await gw.call("GET", "/no/such/thing", token: token)
            #expect(nowhere.status == 404 && nowhere.error == "service_resource_not_found")
            // The router's own errors on claimed paths, in Easemob's words.
            let wrongMethod = try await gw.call("PATCH", "/users/alice", ["nickname": "x"], token: token)
            #expect(wrongMethod.status == 405 && wrongMethod.error == "unsupported_service_operation")
            let huge = try await gw.call(
                "POST", "/users", token: token, raw: Data(repeating: UInt8(ascii: " "), count: (1 << 20) + 1))
            #expect(huge.status == 413 && huge.jsonObject["error_description"] != nil)
            // An org/app nobody configured: Easemob's 404, not the native one.
            let other = try await TestClient(baseURL: gw.baseURL).execute(
                "GET", "/acme/other/users", headers: [("Content-Type", "application/json")])
            #expect(other.status == 404)
            #expect(try other.json()["error"] as? String == "organization_application_not_found")
            // Deleting the user revokes its token.
            #expect(try await gw.call("DELETE", "/users/bob", token: token).status == 200)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 401)
        }
    }

    @Test func tokensSurviveARestartAndSecretRotationRevokesThemForGood() async throws {
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "tuisong-easemob-restart-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        var token = ""
        var bobToken = ""
        try await EasemobGateway.with(in: directory, keep: true) { gw in
            token = try await gw.appToken()
            try await gw.register(token, [["username": "bob", "password": "pw"]])
            bobToken = try #require(
                try await gw.call("POST", "/token", ["grant_type": "password", "username": "bob", "password": "pw"])
                    .jsonObject["access_token"] as? String)
        }
        try await EasemobGateway.with(in: directory, keep: true) { gw in
            #expect(try await gw.call("GET", "/users/bob", token: token).status == 200)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 200)
            // A new client secret: the old app and user tokens are dead, new ones work.
            let sealer = MasterKeySealer(masterKey: gw.runtime.masterKey)
            func setSecret(_ secret: String) async throws {
                var app = try #require(try await gw.runtime.store.app(id: gw.app.id))
                var settings = try #require(try EasemobAppSettings.of(app, sealer: sealer))
                settings.clientSecret = secret
                app.vendorSettings["easemob"] = try settings.stored(appID: app.id, sealer: sealer)
                try await gw.runtime.store.updateApp(app)
                // As the CLI and the admin API do: the gateway forgets the app it kept opened.
                try await gw.publishAppChange(app.id)
            }
            try await setSecret("rotated-secret")
            let revoked = try await gw.call("GET", "/users/bob", token: token)
            #expect(revoked.status == 401 && revoked.error == "unauthorized")
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 401)
            let fresh = try await gw.call(
                "POST", "/token",
                [
                    "grant_type": "client_credentials", "client_id": EasemobGateway.clientID,
                    "client_secret": "rotated-secret",
                ])
            let newToken = try #require(fresh.jsonObject["access_token"] as? String)
            #expect(try await gw.call("GET", "/users/bob", token: newToken).status == 200)
            // The old secret set again is one more rotation: what was issued under it stays dead.
            try await setSecret(EasemobGateway.clientSecret)
            #expect(try await gw.call("GET", "/users/bob", token: token).status == 401)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 401)
            #expect(try await gw.call("GET", "/users/bob", token: newToken).status == 401)
            #expect(try await gw.call("GET", "/users/bob", token: try await gw.appToken()).status == 200)
        }
    }

    /// #40 item 11: a client id changed and changed back does not revive the app tokens issued
    /// before; entered again unchanged it revokes nothing; users' tokens are not tied to it.
    @Test func aClientIDChangedAndChangedBackKeepsTheOldAppTokensDead() async throws {
        try await EasemobGateway.with { gw in
            let secret = EasemobGateway.clientSecret
            let before = try await gw.appToken(ttl: 0)
            try await gw.register(before, [["username": "bob", "password": "pw"]])
            let bobToken = try #require(
                try await gw.call("POST", "/token", ["grant_type": "password", "username": "bob", "password": "pw"])
                    .jsonObject["access_token"] as? String)
            try await gw.setEasemob(clientID: EasemobGateway.clientID, clientSecret: secret)
            #expect(try await gw.call("GET", "/users/bob", token: before).status == 200)

            try await gw.setEasemob(clientID: "YXA6another-client", clientSecret: secret)
            #expect(try await gw.call("GET", "/users/bob", token: before).status == 401)
            let answer = try await gw.call(
                "POST", "/token",
                ["grant_type": "client_credentials", "client_id": "YXA6another-client", "client_secret": secret])
            let during = try #require(answer.jsonObject["access_token"] as? String)
            #expect(try await gw.call("GET", "/users/bob", token: during).status == 200)

            try await gw.setEasemob(clientID: EasemobGateway.clientID, clientSecret: secret)
            #expect(try await gw.call("GET", "/users/bob", token: before).status == 401)
            #expect(try await gw.call("GET", "/users/bob", token: during).status == 401)
            #expect(try await gw.call("GET", "/users/bob", token: try await gw.appToken()).status == 200)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 200)
        }
    }

    @Test func aNewPasswordRevokesTheUsersTokens() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "bob", "password": "old"]])
            func login(_ password: String) async throws -> TestResponse {
                try await gw.call(
                    "POST", "/token", ["grant_type": "password", "username": "bob", "password": password])
            }
            let bobToken = try #require(try await login("old").jsonObject["access_token"] as? String)
            let changed = try await gw.call("PUT", "/users/bob/password", ["newpassword": "new"], token: token)
            #expect(changed.status == 200, "\(changed.text)")
            #expect(changed.jsonObject["action"] as? String == "set user password")
            // A user token cannot change a password; an unknown user is Easemob's 404.
            #expect(
                try await gw.call("PUT", "/users/bob/password", ["newpassword": "x"], token: bobToken).status == 401)
            #expect(
                try await gw.call("PUT", "/users/nobody/password", ["newpassword": "x"], token: token).status == 404)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: bobToken).status == 401)
            #expect(try await login("old").error == "invalid_grant")
            let fresh = try #require(try await login("new").jsonObject["access_token"] as? String)
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: fresh).status == 200)
        }
    }

    @Test func wrongPasswordsLockTheUserOutForGrowingDelays() async throws {
        let clock = ManualClock(Date())
        try await EasemobGateway.with(clock: clock) { gw in
            let token = try await gw.appToken()
            try await gw.register(
                token, [["username": "bob", "password": "right"], ["username": "amy", "password": "a"]])
            func login(_ user: String, _ password: String) async throws -> TestResponse {
                try await gw.call("POST", "/token", ["grant_type": "password", "username": user, "password": password])
            }
            for attempt in 1...3 {
                let wrong = try await login("bob", "wrong \(attempt)")
                #expect(wrong.status == 400 && wrong.error == "invalid_grant", "the first failures are free")
            }
            let fourth = try await login("bob", "wrong 4")
            #expect(fourth.status == 429 && fourth.error == "too_many_attempts", "\(fourth.text)")
            #expect(fourth.headers["retry-after"] == "1")
            // Locked: the right password waits too; another user does not.
            let locked = try await login("bob", "right")
            #expect(locked.status == 429 && locked.headers["retry-after"] == "1")
            #expect(try await login("amy", "a").status == 200)
            clock.advance(by: 1.1)
            #expect(try await login("bob", "right").status == 200, "the lock ends and a success clears the record")
            #expect(try await login("bob", "wrong again").status == 400)
        }
    }
}
