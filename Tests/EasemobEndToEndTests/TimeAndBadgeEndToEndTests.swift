import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGateway
import TuisongLookAlikes

@testable import EasemobProvider

/// Daily intervals past midnight in a non-UTC app time zone, on the real clock; badges under
/// concurrent sends; notifier names choosing credentials.
@Suite(.serialized) struct TimeAndBadgeEndToEndTests {
    /// A `±HH:MM` offset that puts the app's local time at `localMinute` (minutes after
    /// midnight) now, within UTC-12…UTC+12.
    static func offset(puttingLocalTimeAt localMinute: Int, now: Date = Date()) -> String {
        let utcMinute = EasemobPushRules.minuteOfDay(now, in: TimeZone(secondsFromGMT: 0)!)
        var delta = (localMinute - utcMinute) % 1440
        if delta > 720 { delta -= 1440 }
        if delta <= -720 { delta += 1440 }
        let sign = delta < 0 ? "-" : "+"
        return String(format: "%@%02d:%02d", sign, abs(delta) / 60, abs(delta) % 60)
    }

    func setTimeZone(_ gw: EasemobGateway, _ zone: String) async throws {
        var app = try #require(try await gw.runtime.store.app(id: gw.app.id))
        app.vendorSettings["easemob"]?["time_zone"] = zone
        try await gw.runtime.store.updateApp(app)
        // As the CLI and the admin API do: the gateway forgets the app it kept opened.
        try await gw.publishAppChange(app.id)
    }

    func reasons(_ gw: EasemobGateway, _ token: String) async throws -> (pushed: Bool, skipped: [String]) {
        let answer = try await gw.call(
            "POST", "/messages/users", ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"]],
            token: token)
        let id = try #require(answer.data["bob"] as? String)
        let outcome = try await gw.completed(msgID: id)
        return (
            !gw.received(msgID: id).isEmpty, outcome.deliveries.filter { $0.state == .skipped }.compactMap(\.reason)
        )
    }

    @Test func intervalsWrapPastMidnightInTheAppsTimeZone() async throws {
        // 23:50 local: the app's offset is whatever makes it so now (never UTC's own time).
        try await EasemobGateway.with(timeZone: Self.offset(puttingLocalTimeAt: 23 * 60 + 50)) { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice"], ["username": "bob"]])
            _ = try await gw.bind(token, user: "bob", device: "d", apnsToken: apnsToken(1))

            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreInterval": "23:30-00:30"], token: token)
            #expect(try await reasons(gw, token) == (false, ["dnd"]))
            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreInterval": "23:55-00:30"], token: token)
            #expect(try await reasons(gw, token).pushed)

            // 00:10 local: inside the part after midnight.
            try await setTimeZone(gw, Self.offset(puttingLocalTimeAt: 10))
            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreInterval": "23:30-00:30"], token: token)
            #expect(try await reasons(gw, token) == (false, ["dnd"]))
            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreInterval": "23:30-00:05"], token: token)
            #expect(try await reasons(gw, token).pushed)
            // The same interval read in another zone (local 12:10) does not apply.
            _ = try await gw.call(
                "PUT", "/users/bob/notification/user/bob", ["ignoreInterval": "23:30-00:30"], token: token)
            try await setTimeZone(gw, Self.offset(puttingLocalTimeAt: 12 * 60 + 10))
            #expect(try await reasons(gw, token).pushed)

            // The legacy hours wrap too: 23 → 1 at 23:50.
            _ = try await gw.call("PUT", "/users/bob/notification/user/bob", ["ignoreInterval": ""], token: token)
            try await setTimeZone(gw, Self.offset(puttingLocalTimeAt: 23 * 60 + 50))
            _ = try await gw.call(
                "PUT", "/users/bob",
                [
                    "notification_no_disturbing": true, "notification_no_disturbing_start": 23,
                    "notification_no_disturbing_end": 1,
                ],
                token: token)
            #expect(try await reasons(gw, token) == (false, ["dnd"]))
            _ = try await gw.call("PUT", "/users/bob", ["notification_no_disturbing": false], token: token)
            #expect(try await reasons(gw, token).pushed)
        }
    }

    @Test func concurrentMessagesGetDistinctBadges() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice"], ["username": "bob"]])
            _ = try await gw.bind(token, user: "bob", device: "d", apnsToken: apnsToken(1))
            let ids = try await withThrowingTaskGroup(of: String.self) { group in
                for n in 0..<12 {
                    group.addTask {
                        let answer = try await gw.call(
                            "POST", "/messages/users",
                            ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "m\(n)"]], token: token)
                        return try #require(answer.data["bob"] as? String)
                    }
                }
                return try await group.reduce(into: [String]()) { $0.append($1) }
            }
            var badges: [Int] = []
            for id in ids {
                _ = try await gw.completed(msgID: id)
                badges.append(try #require(gw.received(msgID: id)[apnsToken(1)]?.badge))
            }
            #expect(badges.sorted() == Array(1...12))
            #expect(try await gw.call("GET", "/users/bob/offline_msg_count", token: token).data["bob"] as? Int == 12)
        }
    }

    @Test func notifierNamesPickTheCredentialOfEachDevice() async throws {
        try await EasemobGateway.with { gw in
            // Easemob certificate names: one production key, one sandbox key.
            _ = try await gw.runtime.addCredential(
                .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: "EMPRODCERT", teamID: "EMTEAM0001"),
                appID: gw.app.id, environment: .production, selector: "prod-cert")
            _ = try await gw.runtime.addCredential(
                .p8(pem: try PrivateKey.generateP256().pkcs8PEM(), keyID: "EMDEVCERT1", teamID: "EMTEAM0001"),
                appID: gw.app.id, environment: .sandbox, selector: "dev-cert")
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice"], ["username": "bob"]])
            _ = try await gw.bind(token, user: "bob", device: "phone", apnsToken: apnsToken(1), notifier: "prod-cert")
            _ = try await gw.bind(token, user: "bob", device: "pad", apnsToken: apnsToken(2), notifier: "dev-cert")
            let bindings = try await gw.call("GET", "/users/bob/push/binding", token: token)
            #expect(Set(bindings.entities.compactMap { $0["notifier_name"] as? String }) == ["prod-cert", "dev-cert"])

            let answer = try await gw.call(
                "POST", "/messages/users", ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"]],
                token: token)
            let id = try #require(answer.data["bob"] as? String)
            let outcome = try await gw.completed(msgID: id)
            #expect(outcome.status.counts.delivered == 2)
            var keys: [String: String] = [:]
            for notification in gw.mock.receivedNotifications() { keys[notification.deviceToken] = notification.keyID }
            #expect(keys[apnsToken(1)] == "EMPRODCERT" && keys[apnsToken(2)] == "EMDEVCERT1", "\(keys)")
            // Both devices of one receiver carry the same badge.
            let payloads = gw.received(msgID: id)
            #expect(payloads[apnsToken(1)]?.badge == 1 && payloads[apnsToken(2)]?.badge == 1)

            // Unbinding one device (empty token) leaves the other.
            _ = try await gw.bind(token, user: "bob", device: "pad", apnsToken: "", notifier: "dev-cert")
            gw.mock.resetRecorded()
            let again = try await gw.call(
                "POST", "/messages/users", ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "y"]],
                token: token)
            let againID = try #require(again.data["bob"] as? String)
            _ = try await gw.completed(msgID: againID)
            #expect(Set(gw.received(msgID: againID).keys) == [apnsToken(1)])
        }
    }
}
