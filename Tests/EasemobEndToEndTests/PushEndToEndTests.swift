import Foundation
import Testing
import TuisongCore
import TuisongGateway
import TuisongLookAlikes

@testable import EasemobProvider

/// Messages through the whole gateway to the APNs mock: payloads, badges, modes, do-not-disturb,
/// display styles, languages, templates, groups, skip reasons.
@Suite(.serialized) struct PushEndToEndTests {
    @Test func oneToOneMessagesCarryEasemobsPayloadAndTheOfflineCount() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "alice", "nickname": "小艾"], ["username": "bob"]])
            #expect(try await gw.bind(token, user: "bob", device: "bob-phone", apnsToken: apnsToken(1)).status == 200)

            // New API: data maps the receiver to the message id; badge 1, then 2.
            let first = try await gw.call(
                "POST", "/messages/users",
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "早"],
                    "ext": ["em_apns_ext": ["extern": "order-7"]],
                ],
                token: token)
            #expect(first.status == 200 && first.jsonObject["path"] as? String == "/messages/users")
            let firstID = try #require(first.data["bob"] as? String)
            _ = try await gw.completed(msgID: firstID)
            let payload = try #require(gw.received(msgID: firstID)[apnsToken(1)])
            #expect(payload.body == "你有一条新消息" && payload.badge == 1 && payload.aps["sound"] as? String == "default")
            #expect(payload["f"] as? String == "alice" && payload["t"] as? String == "bob")
            #expect(payload["m"] as? String == firstID && payload["e"] as? String == "order-7" && payload["g"] == nil)

            // Old API, no `from` (admin), useMsgId; style 1 shows the sender's name.
            _ = try await gw.call("PUT", "/users/bob", ["notification_display_style": 1], token: token)
            let second = try await gw.call(
                "POST", "/messages?useMsgId=true",
                ["target_type": "users", "target": ["bob"], "msg": ["type": "txt", "msg": "hello"], "from": NSNull()],
                token: token)
            let secondID = try #require(second.data["bob"] as? String)
            _ = try await gw.completed(msgID: secondID)
            let second1 = try #require(gw.received(msgID: secondID)[apnsToken(1)])
            #expect(second1["f"] as? String == "admin" && second1.body == "admin:hello" && second1.badge == 2)
            let count = try await gw.call("GET", "/users/bob/offline_msg_count", token: token)
            #expect(count.data["bob"] as? Int == 2)

            let plain = try await gw.call(
                "POST", "/messages", ["target_type": "users", "target": ["bob"], "msg": ["type": "txt", "msg": "x"]],
                token: token)
            #expect(plain.data["bob"] as? String == "success")
            let badType = try await gw.call(
                "POST", "/messages", ["target_type": "rooms", "target": ["bob"], "msg": ["type": "txt", "msg": "x"]],
                token: token)
            #expect(badType.status == 400 && badType.error == "illegal_argument")
            let tooMany = try await gw.call(
                "POST", "/messages/users",
                ["to": (0...600).map { "u\($0)" }, "type": "txt", "body": ["msg": "x"]], token: token)
            #expect(tooMany.status == 400)
            let emptyFrom = try await gw.call(
                "POST", "/messages/users", ["from": "", "to": ["bob"], "type": "txt", "body": ["msg": "x"]],
                token: token)
            #expect(emptyFrom.status == 400)

            // A new binding (login) resets the count.
            _ = try await gw.bind(token, user: "bob", device: "bob-phone", apnsToken: apnsToken(1))
            #expect(try await gw.call("GET", "/users/bob/offline_msg_count", token: token).data["bob"] as? Int == 0)

            // Language: a translation in it is pushed; without one, the original.
            _ = try await gw.call(
                "PUT", "/users/bob/notification/language", ["translationLanguage": "en"], token: token)
            #expect(
                try await gw.call("GET", "/users/bob/notification/language", token: token).data["language"] as? String
                    == "en")
            let translated = try await send(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt",
                    "body": ["msg": "早", "translations": ["en": "Morning"]],
                ])
            #expect(translated[apnsToken(1)]?.body == "小艾:Morning")
            let untranslated = try await send(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt",
                    "body": ["msg": "早", "translations": ["fr": "Bonjour"]],
                ])
            #expect(untranslated[apnsToken(1)]?.body == "小艾:早")

            // em_apns_ext, every field.
            let custom = try await send(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"],
                    "ext": [
                        "em_apns_ext": [
                            "em_alert_title": "T", "em_alert_subTitle": "S", "em_alert_body": "B",
                            "em_push_sound": "custom.caf", "em_push_mutable_content": true, "em_push_category": "chat",
                        ]
                    ],
                ])
            let aps = try #require(custom[apnsToken(1)]?.aps)
            #expect(aps["alert"] as? [String: String] == ["title": "T", "subtitle": "S", "body": "B"])
            #expect(aps["sound"] as? String == "custom.caf" && aps["mutable-content"] as? Int == 1)
            #expect(aps["category"] as? String == "chat")

            // A template, also visible to the console (one store).
            let created = try await gw.call(
                "POST", "/notification/template",
                ["name": "greet", "title_pattern": "你好,{0}", "content_pattern": "{0}说：{1}"],
                token: token)
            #expect(created.data["name"] as? String == "greet" && created.data["createAt"] is Int)
            #expect(try await gw.runtime.store.template(appID: gw.app.id, name: "greet")?.bodyPattern == "{0}说：{1}")
            let templated = try await send(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"],
                    "ext": ["em_push_template": ["name": "greet", "title_args": ["环信"], "content_args": ["小明", "早"]]],
                ])
            #expect(templated[apnsToken(1)]?.alert["title"] as? String == "你好,环信")
            #expect(templated[apnsToken(1)]?.body == "小明说：早")
            #expect(
                try await gw.call("GET", "/notification/template/greet", token: token).data["title_pattern"] as? String
                    == "你好,{0}")
            #expect(try await gw.call("DELETE", "/notification/template/greet", token: token).status == 200)
            let missing = try await gw.call("GET", "/notification/template/greet", token: token)
            #expect(missing.status == 404 && missing.error == "service_resource_not_found")
            // Made in the console, read through Easemob.
            _ = try await gw.runtime.store.createTemplate(
                appID: gw.app.id, name: "console", titlePattern: "a", bodyPattern: "b")
            #expect(
                try await gw.call("GET", "/notification/template/console", token: token).data["content_pattern"]
                    as? String == "b")

            // em_ignore_notification: nothing; em_force_notification: through do-not-disturb.
            let ignored = try await sendSkipped(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"],
                    "ext": ["em_ignore_notification": true],
                ])
            #expect(ignored == ["ignored"])
            _ = try await gw.call("PUT", "/users/bob/notification/user/bob", ["ignoreDuration": 600_000], token: token)
            #expect(
                try await sendSkipped(gw, token, ["from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"]])
                    == ["dnd"])
            let forced = try await send(
                gw, token,
                [
                    "from": "alice", "to": ["bob"], "type": "txt", "body": ["msg": "x"],
                    "ext": ["em_force_notification": true],
                ])
            #expect(forced[apnsToken(1)] != nil)
        }
    }

    /// Sends with the new API to users and returns what the mock received, by token.
    func send(_ gw: EasemobGateway, _ token: String, _ body: [String: Any]) async throws -> [String: [String: Any]] {
        let answer = try await gw.call("POST", "/messages/users", body, token: token)
        #expect(answer.status == 200, "\(answer.text)")
        let id = try #require(answer.data.values.first as? String)
        _ = try await gw.completed(msgID: id)
        return gw.received(msgID: id)
    }

    /// Sends and returns the skip reasons of the message's deliveries.
    func sendSkipped(_ gw: EasemobGateway, _ token: String, _ body: [String: Any], path: String = "/messages/users")
        async throws -> [String]
    {
        let answer = try await gw.call("POST", path, body, token: token)
        #expect(answer.status == 200, "\(answer.text)")
        let id = try #require(answer.data.values.first as? String)
        let outcome = try await gw.completed(msgID: id)
        #expect(gw.received(msgID: id).isEmpty)
        return outcome.deliveries.filter { $0.state == .skipped }.compactMap(\.reason).sorted()
    }

    @Test func groupsModesMentionsAndTheSender() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, ["owner", "m1", "m2", "m3"].map { ["username": $0] })
            for (n, user) in ["owner", "m1", "m2", "m3"].enumerated() {
                _ = try await gw.bind(token, user: user, device: "d\(n)", apnsToken: apnsToken(10 + n))
            }
            // Trailing slash, the old field names.
            let created = try await gw.call(
                "POST", "/chatgroups/",
                [
                    "groupname": "team", "desc": "d", "public": true, "approval": false, "owner": "owner",
                    "members": ["m1"],
                ],
                token: token)
            let group = try #require(created.data["groupid"] as? String)
            #expect(
                try await gw.call("POST", "/chatgroups/\(group)/users/m2", [String: Any](), token: token).data["result"]
                    as? Bool == true)
            let again = try await gw.call("POST", "/chatgroups/\(group)/users/m2", [String: Any](), token: token)
            #expect(again.status == 403 && again.error == "forbidden_op")
            let batch = try await gw.call("POST", "/chatgroups/\(group)/users", ["usernames": ["m3"]], token: token)
            #expect(batch.data["newmembers"] as? [String] == ["m3"])
            let details = try await gw.call("GET", "/chatgroups/\(group)", token: token)
            let info = try #require((details.jsonObject["data"] as? [[String: Any]])?.first)
            #expect(
                info["name"] as? String == "team" && info["affiliations_count"] as? Int == 4
                    && info["owner"] as? String == "owner")
            let renamed = try await gw.call("PUT", "/chatgroups/\(group)", ["groupname": "team2"], token: token)
            #expect(renamed.data["groupname"] as? Bool == true)
            #expect(
                try await gw.call("DELETE", "/chatgroups/\(group)/users/m3", token: token).data["result"] as? Bool
                    == true)
            let unknown = try await gw.call("GET", "/chatgroups/999", token: token)
            #expect(unknown.status == 404 && unknown.error == "service_resource_not_found")

            // Everyone but the sender (skipped as `sender`); the removed m3 gets nothing.
            let sent = try await gw.call(
                "POST", "/messages/chatgroups", ["from": "m1", "to": [group], "type": "txt", "body": ["msg": "hi"]],
                token: token)
            let id = try #require(sent.data[group] as? String)
            let outcome = try await gw.completed(msgID: id)
            let received = gw.received(msgID: id)
            #expect(Set(received.keys) == [apnsToken(10), apnsToken(12)])
            #expect(
                received[apnsToken(12)]?["g"] as? String == group && received[apnsToken(12)]?["t"] as? String == "m2")
            #expect(outcome.deliveries.filter { $0.state == .skipped }.compactMap(\.reason) == ["sender"])

            // m2: app level AT; owner: app level NONE but this group ALL.
            _ = try await gw.call("PUT", "/users/m2/notification/user/m2", ["type": "AT"], token: token)
            _ = try await gw.call("PUT", "/users/owner/notification/user/owner", ["type": "NONE"], token: token)
            _ = try await gw.call("PUT", "/users/owner/notification/chatgroup/\(group)", ["type": "ALL"], token: token)
            // Old API to a group, with ids: the owner (group ALL beats app NONE) and m1... m2 (AT) not mentioned.
            let plain = try await gw.call(
                "POST", "/messages?useMsgId=true",
                ["target_type": "chatgroups", "target": [group], "msg": ["type": "txt", "msg": "x"], "from": "m1"],
                token: token)
            let plainID = try #require(plain.data[group] as? String)
            let plainOutcome = try await gw.completed(msgID: plainID)
            #expect(Set(gw.received(msgID: plainID).keys) == [apnsToken(10)])
            #expect(
                plainOutcome.deliveries.filter { $0.state == .skipped }.compactMap(\.reason).sorted()
                    == ["not_mentioned", "sender"])
            let mentioned = try await gw.call(
                "POST", "/messages/chatgroups",
                ["from": "m1", "to": [group], "type": "txt", "body": ["msg": "@m2"], "ext": ["em_at_list": ["m2"]]],
                token: token)
            let mentionedID = try #require(mentioned.data[group] as? String)
            _ = try await gw.completed(msgID: mentionedID)
            #expect(Set(gw.received(msgID: mentionedID).keys) == [apnsToken(10), apnsToken(12)])
            let unmentioned = try await gw.call(
                "POST", "/messages/chatgroups", ["from": "m1", "to": [group], "type": "txt", "body": ["msg": "x"]],
                token: token)
            let unmentionedID = try #require(unmentioned.data[group] as? String)
            let skipped = try await gw.completed(msgID: unmentionedID)
            #expect(Set(gw.received(msgID: unmentionedID).keys) == [apnsToken(10)])
            // The native API shows the Easemob message with its skip reasons.
            let native = try await gw.nativeMessage(msgID: unmentionedID)
            #expect(native["vendor"] as? String == "easemob" && native["vendor_message_id"] as? String == unmentionedID)
            #expect(native["skips"] as? [String: Int] == ["not_mentioned": 1, "sender": 1])
            #expect(
                skipped.deliveries.filter { $0.state == .skipped }.compactMap(\.reason).sorted() == [
                    "not_mentioned", "sender",
                ])
            // Owner: conversation NONE beats app ALL.
            _ = try await gw.call("PUT", "/users/owner/notification/user/owner", ["type": "ALL"], token: token)
            _ = try await gw.call("PUT", "/users/owner/notification/chatgroup/\(group)", ["type": "NONE"], token: token)
            let muted = try await gw.call(
                "POST", "/messages/chatgroups",
                ["from": "m1", "to": [group], "type": "txt", "body": ["msg": "x"], "ext": ["em_at_list": "all"]],
                token: token)
            let mutedID = try #require(muted.data[group] as? String)
            let mutedOutcome = try await gw.completed(msgID: mutedID)
            #expect(Set(gw.received(msgID: mutedID).keys) == [apnsToken(12)])
            #expect(
                mutedOutcome.deliveries.filter { $0.state == .skipped }.compactMap(\.reason).sorted() == [
                    "mode_none", "sender",
                ])

            let members = try await gw.call("GET", "/chatgroups/\(group)/users", token: token)
            #expect(members.jsonObject["count"] as? Int == 3)
            // Chat rooms: acknowledged with ids, nothing kept or pushed (their members are online).
            let room = try await gw.call(
                "POST", "/messages/chatrooms", ["from": "m1", "to": ["r1"], "type": "txt", "body": ["msg": "x"]],
                token: token)
            #expect(room.status == 200 && room.data["r1"] is String)
            let oldRoom = try await gw.call(
                "POST", "/messages",
                ["target_type": "chatrooms", "target": ["r1"], "msg": ["type": "txt", "msg": "x"]],
                token: token)
            #expect(oldRoom.data["r1"] as? String == "success")
            #expect(try await gw.call("DELETE", "/chatgroups/\(group)", token: token).data["success"] as? Bool == true)
            let toGone = try await gw.call(
                "POST", "/messages/chatgroups", ["from": "m1", "to": [group], "type": "txt", "body": ["msg": "x"]],
                token: token)
            #expect(toGone.status == 404)
        }
    }

    @Test func settingsAreValidatedAndEchoed() async throws {
        try await EasemobGateway.with { gw in
            let token = try await gw.appToken()
            try await gw.register(token, [["username": "bob"]])
            let set = try await gw.call(
                "PUT", "/users/bob/notification/user/bob",
                ["type": "AT", "ignoreInterval": "21:30-08:00", "ignoreDuration": 86_400_000], token: token)
            #expect(set.data["type"] as? String == "AT" && set.data["ignoreInterval"] as? String == "21:30-08:00")
            let until = try #require(set.data["ignoreDuration"] as? Int)
            #expect(abs(Double(until) / 1000 - Date().timeIntervalSince1970 - 86_400) < 60)
            let read = try await gw.call("GET", "/users/bob/notification/user/bob", token: token)
            #expect(read.data["type"] as? String == "AT" && read.data["ignoreDuration"] as? Int == until)
            let fresh = try await gw.call("GET", "/users/bob/notification/chatgroup/77", token: token)
            #expect(fresh.data["type"] as? String == "DEFAULT" && fresh.data["ignoreDuration"] as? Int == 0)
            for bad: [String: Any] in [
                ["type": "SOME"], ["ignoreDuration": 604_800_001], ["ignoreDuration": -1],
                ["ignoreInterval": "25:00-01:00"],
            ] {
                let answer = try await gw.call("PUT", "/users/bob/notification/user/bob", bad, token: token)
                #expect(answer.status == 400 && answer.error == "illegal_argument", "\(bad)")
            }
            let badType = try await gw.call("PUT", "/users/bob/notification/room/1", ["type": "ALL"], token: token)
            #expect(badType.status == 400)
            let nobody = try await gw.call(
                "PUT", "/users/nobody/notification/user/nobody", ["type": "ALL"], token: token)
            #expect(nobody.status == 404)
        }
    }
}
