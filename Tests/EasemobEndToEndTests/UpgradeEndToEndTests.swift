import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGateway
import TuisongPluginTestKit
import TuisongPostgresTestKit

@testable import EasemobProvider

/// Databases written by release e167280, whose Easemob tokens were bound to the client secret's
/// value (`Tests/Fixtures/easemob-e167280/README.md`), opened by this build as an upgraded
/// gateway opens them: the tokens it issued keep working until they expire, and whatever
/// revokes a token issued today revokes them too, for good.
@Suite struct UpgradeEndToEndTests {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "Fixtures/easemob-e167280")

    /// What the old release answered (`tokens-<database>.json`).
    struct IssuedTokens: Decodable {
        /// Epoch seconds, when the fixture was written.
        var writtenAt: Int64
        /// `client_credentials` with `ttl: 0`: never expires.
        var app: String
        /// Password grants, Easemob's default lifetime (60 days).
        var bob: String
        var carol: String

        enum CodingKeys: String, CodingKey {
            case writtenAt = "written_at"
            case app, bob, carol
        }
    }

    /// A copy of the fixture for `database` (its SQLite file, or its dump restored into a new
    /// database of the test cluster), served by this build with the clock a day after the
    /// fixture was written.
    static func upgraded(
        _ database: PluginStoreBackend, _ body: (EasemobGateway, IssuedTokens, ManualClock) async throws -> Void
    ) async throws {
        let tokens = try JSONDecoder().decode(
            IssuedTokens.self,
            from: Data(
                contentsOf: fixtures.appending(
                    path: database == .sqlite ? "tokens-sqlite.json" : "tokens-postgres.json")))
        let directory = FileManager.default.temporaryDirectory.appending(
            path: "tuisong-easemob-upgrade-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appending(path: "master.key")
        try FileManager.default.copyItem(at: fixtures.appending(path: "master.key"), to: key)
        // A checkout keeps no file modes but the executable bit; the gateway wants the key 0600.
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: key.path)
        var environment: [String: String] = [:]
        var postgres: TestDatabase?
        switch database {
        case .sqlite:
            try FileManager.default.copyItem(
                at: fixtures.appending(path: "tuisong.db"), to: directory.appending(path: "tuisong.db"))
        case .postgresql:
            let created = try TestDatabase()
            postgres = created
            try created.restore(dump: fixtures.appending(path: "postgres.sql"))
            environment["TUISONG_DATABASE_URL"] = created.url
        }
        defer { postgres?.drop() }
        let clock = ManualClock(Date(timeIntervalSince1970: TimeInterval(tokens.writtenAt + 86_400)))
        try await EasemobGateway.with(in: directory, clock: clock, environment: environment) { gw in
            #expect(gw.app.name == "chat")
            try await body(gw, tokens, clock)
        }
    }

    /// `token` with the first character of its signature changed (all six of its bits count,
    /// unlike the last one's).
    static func tampered(_ token: String) throws -> String {
        let dot = try #require(token.firstIndex(of: "."))
        let first = token.index(after: dot)
        return String(token[...dot]) + (token[first] == "A" ? "B" : "A") + token[token.index(after: first)...]
    }

    /// `token`'s claims made to speak for another user, its signature kept.
    static func renamed(_ token: String, to user: String) throws -> String {
        let parts = token.dropFirst(EasemobToken.prefix.count).split(separator: ".")
        let claims = String(decoding: try #require(Base64URL.decode(String(parts[0]))), as: UTF8.self)
        let fields = claims.split(separator: "|", omittingEmptySubsequences: false).dropLast().joined(separator: "|")
        return EasemobToken.prefix + Base64URL.encode(Array((fields + "|" + user).utf8)) + "." + parts[1]
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func tokensIssuedBeforeTheUpgradeKeepWorkingUntilTheyExpire(_ database: PluginStoreBackend) async throws {
        try await Self.upgraded(database) { gw, tokens, clock in
            let applied = try await gw.runtime.store.sharedDatabase.read { db in
                try db.query("SELECT app_id FROM easemob_legacy_token_secrets").compactMap { $0[0].int }
            }
            #expect(applied == [gw.app.id])

            let asApp = try await gw.call("GET", "/users/bob", token: tokens.app)
            #expect(asApp.status == 200, "\(asApp.text)")
            #expect(asApp.entities.first?["username"] as? String == "bob")
            for (user, token) in [("bob", tokens.bob), ("carol", tokens.carol)] {
                let own = try await gw.call("GET", "/users/\(user)/push/binding", token: token)
                #expect(own.status == 200, "\(user): \(own.text)")
            }
            // Only the old release's own signatures: a changed one, or a user token made to speak
            // for someone else, is refused.
            #expect(try await gw.call("GET", "/users/bob", token: try Self.tampered(tokens.app)).status == 401)
            #expect(
                try await gw.call("GET", "/users/bob/push/binding", token: try Self.tampered(tokens.bob)).status == 401)
            let carolAsBob = try Self.renamed(tokens.carol, to: "bob")
            #expect(try await gw.call("GET", "/users/bob/push/binding", token: carolAsBob).status == 401)
            // A user token stays a user token.
            #expect(try await gw.call("GET", "/users/carol", token: tokens.bob).status == 401)
            // Tokens issued now work beside them.
            let fresh = try await gw.appToken()
            #expect(try await gw.call("GET", "/users/bob", token: fresh).status == 200)

            // The users' tokens expire when the old release said; the app token (ttl 0) never.
            clock.advance(by: 60 * 86_400)
            let expired = try await gw.call("GET", "/users/bob/push/binding", token: tokens.bob)
            #expect(expired.status == 401 && expired.error == "unauthorized")
            #expect(try await gw.call("GET", "/users/bob", token: tokens.app).status == 200)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func whatRevokesTodaysTokensRevokesTheOldOnesForGood(_ database: PluginStoreBackend) async throws {
        try await Self.upgraded(database) { gw, tokens, _ in
            func status(_ path: String, _ token: String) async throws -> Int {
                try await gw.call("GET", path, token: token).status
            }
            // The same settings entered again are no rotation.
            try await gw.setEasemob(
                clientID: EasemobGateway.clientID, clientSecret: EasemobGateway.clientSecret)
            #expect(try await status("/users/bob", tokens.app) == 200)
            #expect(try await status("/users/bob/push/binding", tokens.bob) == 200)

            // A new password revokes that user's tokens only.
            let changed = try await gw.call("PUT", "/users/carol/password", ["newpassword": "new"], token: tokens.app)
            #expect(changed.status == 200, "\(changed.text)")
            #expect(try await status("/users/carol/push/binding", tokens.carol) == 401)
            #expect(try await status("/users/bob/push/binding", tokens.bob) == 200)

            // The client id changed and changed back: the old app token stays dead; the users'
            // tokens are not tied to the client id.
            try await gw.setEasemob(clientID: "YXA6another-client", clientSecret: EasemobGateway.clientSecret)
            #expect(try await status("/users/bob", tokens.app) == 401)
            try await gw.setEasemob(
                clientID: EasemobGateway.clientID, clientSecret: EasemobGateway.clientSecret)
            #expect(try await status("/users/bob", tokens.app) == 401)
            #expect(try await status("/users/bob/push/binding", tokens.bob) == 200)

            // A new secret revokes every old token; the old secret set again revives none.
            try await gw.setEasemob(clientID: EasemobGateway.clientID, clientSecret: "YXA6rotated-secret")
            #expect(try await status("/users/bob/push/binding", tokens.bob) == 401)
            try await gw.setEasemob(
                clientID: EasemobGateway.clientID, clientSecret: EasemobGateway.clientSecret)
            #expect(try await status("/users/bob/push/binding", tokens.bob) == 401)
            #expect(try await status("/users/bob", tokens.app) == 401)
            #expect(try await status("/users/bob", try await gw.appToken()) == 200)
        }
    }
}
