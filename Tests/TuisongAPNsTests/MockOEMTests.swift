import Foundation
import Testing
import TuisongLookAlikes

/// Requests to the Xiaomi, OPPO and vivo look-alikes through curl; signs computed by
/// `sha256sum` and `md5sum`, not by the code under test.
extension MockHarness {
    static let vivoJSON = ["content-type: application/json"]

    /// Lowercase hex digest of `text` by coreutils (`tool` is `sha256sum` or `md5sum`).
    static func hexDigest(_ tool: String, _ text: String) throws -> String {
        let result = try Command.run("sh", ["-c", "printf '%s' \"$0\" | \(tool)", text])
        return String(result.stdout.prefix { $0 != " " })
    }

    static var nowMilliseconds: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    // MARK: Xiaomi

    func xiaomiSend(_ ids: [String], key: String? = nil, fields: [(String, String)]? = nil) throws -> CurlResponse {
        var form = [("registration_id", ids.joined(separator: ","))]
        form +=
            fields ?? [
                ("restricted_package_name", setup.xiaomiApp.packageName), ("title", "标题"), ("description", "内容"),
                ("pass_through", "0"), ("notify_type", "-1"), ("time_to_live", "86400000"), ("notify_id", "2"),
                ("extra.channel_id", "chat"), ("extra.notify_effect", "2"), ("extra.intent_uri", "intent:#Intent;end"),
                ("payload", "{\"k\":\"v\"}"),
            ]
        return try postForm(
            "/v3/message/regid", form, headers: ["authorization: key=\(key ?? setup.xiaomiApp.appSecret)"])
    }

    // MARK: OPPO

    func oppoAuth(appKey: String? = nil, secret: String? = nil, timestamp: Int64? = nil) throws -> CurlResponse {
        let key = appKey ?? setup.oppoApp.appKey
        let time = String(timestamp ?? Self.nowMilliseconds)
        let sign = try Self.hexDigest("sha256sum", key + time + (secret ?? setup.oppoApp.masterSecret))
        return try postForm("/server/v1/auth", [("app_key", key), ("timestamp", time), ("sign", sign)])
    }

    func oppoToken() throws -> String {
        let response = try oppoAuth()
        return try #require((response.json?["data"] as? [String: Any])?["auth_token"] as? String)
    }

    static func oppoMessage(_ regID: String, notification: String? = nil) -> String {
        #"{"target_type":2,"target_value":"\#(regID)","notification":\#(notification ?? #"{"title":"标题","content":"内容","click_action_type":1,"click_action_activity":"com.example.Main","action_parameters":"{\"k\":\"v\"}","channel_id":"chat","off_line_ttl":3600}"#)}"#
    }

    func oppoUnicast(_ message: String, token: String) throws -> CurlResponse {
        try postForm("/server/v1/message/notification/unicast", [("auth_token", token), ("message", message)])
    }

    func oppoBatch(_ messages: [String], token: String) throws -> CurlResponse {
        try postForm(
            "/server/v1/message/notification/unicast_batch",
            [("auth_token", token), ("messages", "[" + messages.joined(separator: ",") + "]")])
    }

    // MARK: vivo

    func vivoAuth(appID: String? = nil, appKey: String? = nil, secret: String? = nil, timestamp: Int64? = nil)
        throws -> CurlResponse
    {
        let app = setup.vivoApp
        let time = String(timestamp ?? Self.nowMilliseconds)
        let sign = try Self.hexDigest(
            "md5sum", (appID ?? app.appID) + (appKey ?? app.appKey) + time + (secret ?? app.appSecret))
        let body =
            #"{"appId":\#(appID ?? app.appID),"appKey":"\#(appKey ?? app.appKey)","timestamp":\#(time),"sign":"\#(sign)"}"#
        return try post("/message/auth", body: body, headers: Self.vivoJSON)
    }

    func vivoToken() throws -> String {
        try #require(try vivoAuth().json?["authToken"] as? String)
    }

    /// A message body (`regId` for `/message/send`, none for `saveListPayload`).
    static func vivoMessage(regID: String? = nil, extra: String = "") -> String {
        let target = regID.map { #""regId":"\#($0)","# } ?? ""
        return
            #"{\#(target)"notifyType":4,"title":"标题","content":"内容","timeToLive":86400,"skipType":4,"skipContent":"intent:#Intent;end","networkType":-1,"classification":1,"clientCustomMap":{"k":"v"},"extra":{"callback":"https://example.com/cb"},"requestId":"r-\#(UUID().uuidString.prefix(8))"\#(extra)}"#
    }

    func vivoPost(_ path: String, _ body: String, token: String?) throws -> CurlResponse {
        try post(path, body: body, headers: Self.vivoJSON + (token.map { ["authToken: \($0)"] } ?? []))
    }
}

extension CurlResponse {
    /// Xiaomi's and OPPO's `code`, vivo's `result`.
    var vendorCode: Int? { ((json?["code"] ?? json?["result"]) as? NSNumber)?.intValue }
}

@Suite("Android look-alikes: Xiaomi MiPush")
struct MockXiaomiTests {
    @Test("a send keyed with the AppSecret is accepted and recorded; bad ids land in bad_regids or fail it (20301)")
    func sendAndBadIDs() throws {
        let harness = try MockHarness {
            $0.faults.androidTokenPrefixes = ["gone-": .unregistered, "bad-": .invalidArgument]
        }
        let ok = try harness.xiaomiSend(["mi1", "mi2"])
        #expect(ok.status == 200)
        #expect(ok.json?["result"] as? String == "ok")
        #expect(ok.vendorCode == 0)
        let data = try #require(ok.json?["data"] as? [String: Any])
        #expect((data["id"] as? String)?.isEmpty == false)
        #expect(data["bad_regids"] == nil)

        let partial = try harness.xiaomiSend(["mi3", "gone-1", "bad-2", "bad id"])
        #expect(partial.vendorCode == 0)
        #expect((partial.json?["data"] as? [String: Any])?["bad_regids"] as? String == "gone-1,bad-2,bad id")

        let none = try harness.xiaomiSend(["gone-3", "bad-4"])
        #expect(none.status == 200)
        #expect(none.json?["result"] as? String == "error")
        #expect(none.vendorCode == 20301)

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.map(\.service) == [.xiaomi, .xiaomi])
        #expect(recorded.map(\.tokens) == [["mi1", "mi2"], ["mi3"]])
        #expect(recorded.last?.refusedTokens == ["gone-1", "bad-2", "bad id"])
        #expect(recorded.first?.target == harness.setup.xiaomiApp.packageName)
        #expect(recorded.first?.messageID == data["id"] as? String)
        let firstBody = String(decoding: recorded.first?.body ?? [], as: UTF8.self)
        #expect(firstBody.contains("registration_id=mi1%2Cmi2"))
        let statistics = harness.server.androidStatistics.xiaomi
        #expect(statistics.sendRequests == 3)
        #expect(statistics.messagesDelivered == 3)
        #expect(statistics.messagesRefused == 5)
        #expect(statistics.responsesByCode["20301"] == 1)
    }

    @Test("a wrong key, another package, missing or bad fields and more than 1000 ids are refused in Xiaomi's shape")
    func refusals() throws {
        let harness = try MockHarness()
        let wrongKey = try harness.xiaomiSend(["mi1"], key: "not-the-secret")
        #expect(wrongKey.status == 200)
        #expect(wrongKey.json?["result"] as? String == "error")
        #expect(wrongKey.vendorCode == 21301)
        #expect(wrongKey.json?["description"] is String)
        #expect(wrongKey.json?["trace_id"] is String)
        let package = harness.setup.xiaomiApp.packageName
        let cases: [([String], [(String, String)], Int)] = [
            (["a"], [("restricted_package_name", "com.other"), ("title", "t"), ("description", "d")], 10017),
            (["a"], [("title", "t"), ("description", "d")], 21305),
            (["a"], [("restricted_package_name", package), ("description", "d")], 21305),
            (["a"], [("restricted_package_name", package), ("pass_through", "1")], 21305),
            (
                ["a"],
                [("restricted_package_name", package), ("title", "t"), ("description", "d"), ("time_to_live", "-5")],
                10017
            ),
            (
                ["a"],
                [
                    ("restricted_package_name", package), ("title", "t"), ("description", "d"),
                    ("extra.notify_effect", "3"),
                ],
                10017
            ),
            ([], [("restricted_package_name", package), ("title", "t"), ("description", "d")], 21305),
            (
                ["a"],
                [
                    ("restricted_package_name", package), ("title", "t"), ("description", "d"),
                    ("extra.callback", "https://example.com/r"),
                    ("extra.callback.param", String(repeating: "p", count: 65)),
                ],
                10017
            ),
            (
                ["a"],
                [
                    ("restricted_package_name", package), ("title", "t"), ("description", "d"),
                    ("extra.callback.type", "0"),
                ],
                10017
            ),
            (
                (0...1000).map { "m\($0)" },
                [("restricted_package_name", package), ("title", "t"), ("description", "d")], 10017
            ),
        ]
        for (ids, fields, code) in cases {
            let response = try harness.xiaomiSend(ids, fields: fields)
            #expect(response.status == 200, "\(fields)")
            #expect(response.vendorCode == code, "\(fields)")
        }
        // A pass-through message needs no title; a trailing comma (as some SDKs send) is no id.
        let passThrough = try harness.xiaomiSend(
            ["p1", ""], fields: [("restricted_package_name", package), ("pass_through", "1"), ("payload", "x")])
        #expect(passThrough.vendorCode == 0)
        #expect(harness.server.receivedAndroidMessages().map(\.tokens) == [["p1"]])
        #expect(harness.server.androidStatistics.xiaomi.authenticationFailures == 1)
    }

    @Test("fault prefixes: quota- is the daily limit 200001, unavailable- 10002, internal- HTTP 500")
    func faults() throws {
        let harness = try MockHarness { $0.faults = .magicTokenPrefixes }
        let expected: [(String, Int, Int)] = [
            ("quota-1", 200, 200001), ("unavailable-1", 200, 10002), ("internal-1", 500, 10001),
        ]
        for (token, status, code) in expected {
            let response = try harness.xiaomiSend(["ok-1", token])
            #expect(response.status == status, "\(token)")
            #expect(response.vendorCode == code, "\(token)")
        }
        let invalid = try harness.xiaomiSend(["ok-2", "unregistered-1", "invalid-1"])
        #expect((invalid.json?["data"] as? [String: Any])?["bad_regids"] as? String == "unregistered-1,invalid-1")
        #expect(harness.server.receivedAndroidMessages().map(\.tokens) == [["ok-2"]])
    }
}

@Suite("Android look-alikes: OPPO Push")
struct MockOppoTests {
    @Test("a SHA-256 sign buys an auth_token; a wrong secret, unknown key, missing field or stale timestamp is refused")
    func auth() throws {
        let harness = try MockHarness()
        let ok = try harness.oppoAuth()
        #expect(ok.status == 200)
        #expect(ok.vendorCode == 0)
        #expect(ok.json?["message"] as? String == "Success")
        let data = try #require(ok.json?["data"] as? [String: Any])
        #expect((data["auth_token"] as? String)?.isEmpty == false)
        #expect(
            (data["create_time"] as? NSNumber).map { abs($0.int64Value - MockHarness.nowMilliseconds) < 60_000 } == true
        )

        #expect(try harness.oppoAuth(secret: "wrong").vendorCode == 16)
        #expect(try harness.oppoAuth(appKey: "unknown").vendorCode == 14)
        #expect(try harness.oppoAuth(timestamp: MockHarness.nowMilliseconds - 11 * 60 * 1000).vendorCode == 19)
        let missing = try harness.postForm("/server/v1/auth", [("app_key", harness.setup.oppoApp.appKey)])
        #expect(missing.vendorCode == 17)
        #expect(try harness.postForm("/server/v1/auth", []).vendorCode == 15)
        #expect(harness.server.androidStatistics.oppo.tokenGrants == 1)
        #expect(harness.server.androidStatistics.oppo.tokenRefusals == 5)
    }

    @Test("unicast and batch unicast are recorded; an invalid regId is refused alone (10000) or per entry")
    func sendAndBatch() throws {
        let harness = try MockHarness { $0.faults.androidTokenPrefixes = ["gone-": .unregistered] }
        let token = try harness.oppoToken()
        let unicast = try harness.oppoUnicast(MockHarness.oppoMessage("CN_op1"), token: token)
        #expect(unicast.status == 200)
        #expect(unicast.vendorCode == 0)
        let messageID = try #require((unicast.json?["data"] as? [String: Any])?["messageId"] as? String)

        let invalid = try harness.oppoUnicast(MockHarness.oppoMessage("gone-1"), token: token)
        #expect(invalid.vendorCode == 10000)

        // The token may travel as a header too.
        let viaHeader = try harness.post(
            "/server/v1/message/notification/unicast",
            body: "message=" + MockHarness.oppoMessage("CN_op2").addingPercentEncoding(
                withAllowedCharacters: .alphanumerics)!,
            headers: ["content-type: application/x-www-form-urlencoded", "auth_token: \(token)"])
        #expect(viaHeader.vendorCode == 0)

        let batch = try harness.oppoBatch(
            [MockHarness.oppoMessage("CN_op3"), MockHarness.oppoMessage("gone-2"), MockHarness.oppoMessage("bad id")],
            token: token)
        #expect(batch.vendorCode == 0)
        let entries = try #require(batch.json?["data"] as? [[String: Any]])
        #expect(entries.map { $0["registrationId"] as? String } == ["CN_op3", "gone-2", "bad id"])
        #expect(entries[0]["messageId"] is String)
        #expect(entries[0]["errorCode"] == nil)
        #expect(entries[1...].map { ($0["errorCode"] as? NSNumber)?.intValue } == [10000, 10000])

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.map(\.service) == [.oppo, .oppo, .oppo])
        #expect(recorded.map(\.tokens) == [["CN_op1"], ["CN_op2"], ["CN_op3"]])
        #expect(recorded.last?.refusedTokens == ["gone-2", "bad id"])
        #expect(recorded.first?.messageID == messageID)
        #expect(recorded.first?.target == harness.setup.oppoApp.appKey)
        let statistics = harness.server.androidStatistics.oppo
        #expect(statistics.messagesDelivered == 3)
        #expect(statistics.messagesRefused == 3)
    }

    @Test("fault prefixes: quota- is the documented daily limit 33, for a unicast and for a whole batch")
    func faults() throws {
        let harness = try MockHarness { $0.faults = .magicTokenPrefixes }
        let token = try harness.oppoToken()
        let quota = try harness.oppoUnicast(MockHarness.oppoMessage("quota-1"), token: token)
        #expect(quota.status == 200)
        #expect(quota.vendorCode == 33)
        #expect(quota.json?["message"] as? String == "The number of messages exceeds the daily limit")
        let batchQuota = try harness.oppoBatch(
            [MockHarness.oppoMessage("ok-1"), MockHarness.oppoMessage("quota-2")], token: token)
        #expect(batchQuota.vendorCode == 33)
        let unavailable = try harness.oppoUnicast(MockHarness.oppoMessage("unavailable-1"), token: token)
        #expect(unavailable.status == 200)
        #expect(unavailable.vendorCode == -1)
        let internalError = try harness.oppoUnicast(MockHarness.oppoMessage("internal-1"), token: token)
        #expect(internalError.status == 500)
        #expect(internalError.vendorCode == -1)
        for regID in ["unregistered-1", "invalid-1"] {
            #expect(try harness.oppoUnicast(MockHarness.oppoMessage(regID), token: token).vendorCode == 10000)
        }
        #expect(harness.server.receivedAndroidMessages().isEmpty)
        #expect(harness.server.androidStatistics.oppo.responsesByCode["33"] == 2)
    }

    @Test("missing, unknown, expired and revoked auth_tokens are refused (29, 11); bad bodies 40 and 41")
    func refusals() throws {
        let expiring = try MockHarness { $0.accessTokenLifetimeSeconds = 0 }
        let stale = try expiring.oppoToken()
        #expect(try expiring.oppoUnicast(MockHarness.oppoMessage("CN_1"), token: stale).vendorCode == 11)

        let harness = try MockHarness()
        let token = try harness.oppoToken()
        let missing = try harness.postForm(
            "/server/v1/message/notification/unicast", [("message", MockHarness.oppoMessage("CN_1"))])
        #expect(missing.vendorCode == 29)
        #expect(try harness.oppoUnicast(MockHarness.oppoMessage("CN_1"), token: "made-up").vendorCode == 11)
        let cases: [(String, Int)] = [
            ("not json", 41),
            (#"{"target_type":2,"target_value":"CN_1"}"#, 40),
            (#"{"target_type":5,"target_value":"alias","notification":{"title":"t","content":"c"}}"#, 41),
            (MockHarness.oppoMessage("CN_1", notification: #"{"content":"c"}"#), 40),
            (
                MockHarness.oppoMessage(
                    "CN_1", notification: #"{"title":"\#(String(repeating: "长", count: 51))","content":"c"}"#), 41
            ),
            (MockHarness.oppoMessage("CN_1", notification: #"{"title":"t","content":"c","click_action_type":2}"#), 40),
            (MockHarness.oppoMessage("CN_1", notification: #"{"title":"t","content":"c","click_action_type":3}"#), 41),
            (MockHarness.oppoMessage("CN_1", notification: #"{"title":"t","content":"c","off_line_ttl":259201}"#), 41),
            (
                MockHarness.oppoMessage("CN_1", notification: #"{"title":"t","content":"c","action_parameters":"x"}"#),
                41
            ),
            (
                MockHarness.oppoMessage(
                    "CN_1",
                    notification:
                        #"{"title":"t","content":"c","call_back_url":"https://e.com/\#(String(repeating: "u", count: 190))"}"#
                ), 41
            ),
            (
                MockHarness.oppoMessage(
                    "CN_1",
                    notification:
                        #"{"title":"t","content":"c","call_back_parameter":"\#(String(repeating: "p", count: 51))"}"#
                ), 41
            ),
        ]
        for (message, code) in cases {
            #expect(try harness.oppoUnicast(message, token: token).vendorCode == code, "\(message)")
        }
        let tooMany = try harness.oppoBatch((0...1000).map { MockHarness.oppoMessage("CN_\($0)") }, token: token)
        #expect(tooMany.vendorCode == 41)
        let badElement = try harness.oppoBatch(
            [MockHarness.oppoMessage("CN_1"), #"{"target_type":2,"target_value":"CN_2"}"#], token: token)
        #expect(badElement.vendorCode == 40)
        #expect((badElement.json?["message"] as? String)?.contains("messages[1]") == true)
        #expect(try harness.oppoUnicast(MockHarness.oppoMessage("CN_1"), token: token).vendorCode == 0)
        harness.server.revokeAccessTokens()
        #expect(try harness.oppoUnicast(MockHarness.oppoMessage("CN_1"), token: token).vendorCode == 11)
        #expect(harness.server.receivedAndroidMessages().count == 1)
        #expect(harness.server.androidStatistics.oppo.authenticationFailures == 3)
    }
}

@Suite("Android look-alikes: vivo Push")
struct MockVivoTests {
    @Test("an MD5 sign buys an authToken; a wrong secret, unknown app, missing field or stale timestamp is refused")
    func auth() throws {
        let harness = try MockHarness()
        let ok = try harness.vivoAuth()
        #expect(ok.status == 200)
        #expect(ok.vendorCode == 0)
        #expect(ok.json?["desc"] as? String == "请求成功")
        #expect((ok.json?["authToken"] as? String)?.isEmpty == false)
        #expect(try harness.vivoAuth(secret: "wrong").vendorCode == 10207)
        #expect(try harness.vivoAuth(appID: "999").vendorCode == 10205)
        #expect(try harness.vivoAuth(appKey: "other").vendorCode == 10206)
        #expect(try harness.vivoAuth(timestamp: MockHarness.nowMilliseconds + 11 * 60 * 1000).vendorCode == 10204)
        let noAppID = try harness.post("/message/auth", body: #"{"appKey":"k","timestamp":1,"sign":"s"}"#)
        #expect(noAppID.vendorCode == 10200)
        let noKey = try harness.post("/message/auth", body: #"{"appId":"1","timestamp":1,"sign":"s"}"#)
        #expect(noKey.vendorCode == 10201)
        #expect(harness.server.androidStatistics.vivo.tokenGrants == 1)
        #expect(harness.server.androidStatistics.vivo.tokenRefusals == 6)
    }

    @Test("a single send is recorded with its taskId; saveListPayload then pushToList reports invalidUsers")
    func sendAndList() throws {
        let harness = try MockHarness { $0.faults.androidTokenPrefixes = ["gone-": .unregistered] }
        let token = try harness.vivoToken()
        let single = try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "v1"), token: token)
        #expect(single.status == 200)
        #expect(single.vendorCode == 0)
        let singleTask = try #require(single.json?["taskId"] as? String)
        let gone = try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "gone-1"), token: token)
        #expect(gone.vendorCode == 10302)
        #expect(gone.json?["desc"] as? String == "regId不合法")

        let saved = try harness.vivoPost(
            "/message/saveListPayload", MockHarness.vivoMessage(extra: #","appId":\#(harness.setup.vivoApp.appID)"#),
            token: token)
        #expect(saved.vendorCode == 0)
        let taskID = try #require(saved.json?["taskId"] as? String)
        let list = try harness.vivoPost(
            "/message/pushToList", #"{"regIds":["v2","gone-2","v3","bad id"],"taskId":"\#(taskID)","requestId":"r1"}"#,
            token: token)
        #expect(list.vendorCode == 0)
        #expect(list.json?["requestId"] as? String == "r1")
        let invalidUsers = try #require(list.json?["invalidUsers"] as? [[String: Any]])
        #expect(invalidUsers.map { $0["userid"] as? String } == ["gone-2", "bad id"])
        #expect(invalidUsers.map { ($0["status"] as? NSNumber)?.intValue } == [1, 1])

        let recorded = harness.server.receivedAndroidMessages()
        #expect(recorded.map(\.service) == [.vivo, .vivo])
        #expect(recorded.map(\.tokens) == [["v1"], ["v2", "v3"]])
        #expect(recorded.map(\.messageID) == [singleTask, taskID])
        #expect(recorded.last?.refusedTokens == ["gone-2", "bad id"])
        #expect(recorded.first?.target == harness.setup.vivoApp.appID)
        let savedBody = String(decoding: recorded.last?.body ?? [], as: UTF8.self)
        #expect(savedBody.contains(#""title":"标题""#))
        let statistics = harness.server.androidStatistics.vivo
        #expect(statistics.messagesDelivered == 3)
        #expect(statistics.messagesRefused == 3)
    }

    @Test("fault prefixes: quota- is 10070 (10073 for system messages), unavailable- 10040, internal- HTTP 500")
    func faults() throws {
        let harness = try MockHarness { $0.faults = .magicTokenPrefixes }
        let token = try harness.vivoToken()
        let operation = MockHarness.vivoMessage(regID: "quota-1").replacingOccurrences(
            of: #""classification":1"#, with: #""classification":0"#)
        #expect(try harness.vivoPost("/message/send", operation, token: token).vendorCode == 10070)
        #expect(
            try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "quota-2"), token: token).vendorCode
                == 10073)
        let saved = try harness.vivoPost(
            "/message/saveListPayload",
            MockHarness.vivoMessage().replacingOccurrences(of: #""classification":1"#, with: #""classification":0"#),
            token: token)
        let taskID = try #require(saved.json?["taskId"] as? String)
        let listQuota = try harness.vivoPost(
            "/message/pushToList", #"{"regIds":["ok-1","quota-3"],"taskId":"\#(taskID)","requestId":"r"}"#, token: token
        )
        #expect(listQuota.vendorCode == 10070)
        let unavailable = try harness.vivoPost(
            "/message/send", MockHarness.vivoMessage(regID: "unavailable-1"), token: token)
        #expect(unavailable.status == 200)
        #expect(unavailable.vendorCode == 10040)
        let internalError = try harness.vivoPost(
            "/message/send", MockHarness.vivoMessage(regID: "internal-1"), token: token)
        #expect(internalError.status == 500)
        #expect(internalError.body == "Internet server error!")
        for regID in ["unregistered-1", "invalid-1"] {
            #expect(
                try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: regID), token: token).vendorCode
                    == 10302)
        }
        #expect(harness.server.receivedAndroidMessages().isEmpty)
        #expect(harness.server.androidStatistics.vivo.responsesByCode["10070"] == 2)
    }

    @Test("missing, unknown, expired and revoked authTokens are refused (10000); another appId 10094; bad bodies 10050")
    func refusals() throws {
        let expiring = try MockHarness { $0.accessTokenLifetimeSeconds = 0 }
        let stale = try expiring.vivoToken()
        #expect(
            try expiring.vivoPost("/message/send", MockHarness.vivoMessage(regID: "v1"), token: stale).vendorCode
                == 10000)

        let harness = try MockHarness()
        let token = try harness.vivoToken()
        #expect(
            try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "v1"), token: nil).vendorCode == 10000)
        #expect(
            try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "v1"), token: "made-up").vendorCode
                == 10000)
        let otherApp = try harness.vivoPost(
            "/message/send", MockHarness.vivoMessage(regID: "v1", extra: #","appId":42"#), token: token)
        #expect(otherApp.vendorCode == 10094)
        let valid = MockHarness.vivoMessage(regID: "v1")
        let cases = [
            valid.replacingOccurrences(of: #""regId":"v1","#, with: ""),
            valid.replacingOccurrences(of: #""notifyType":4"#, with: #""notifyType":7"#),
            valid.replacingOccurrences(of: #""title":"标题""#, with: #""title":"\#(String(repeating: "长", count: 21))""#),
            valid.replacingOccurrences(of: #""timeToLive":86400"#, with: #""timeToLive":60"#),
            valid.replacingOccurrences(of: #""skipType":4,"skipContent":"intent:#Intent;end""#, with: #""skipType":2"#),
            valid.replacingOccurrences(of: #""classification":1"#, with: #""classification":2"#),
            valid.replacingOccurrences(of: #""clientCustomMap":{"k":"v"}"#, with: #""clientCustomMap":{"k":1}"#),
            valid.replacingOccurrences(
                of: #""extra":{"callback":"https://example.com/cb"}"#, with: #""extra":{"callback.param":"p"}"#),
            valid.replacingOccurrences(
                of: #""extra":{"callback":"https://example.com/cb"}"#,
                with: #""extra":{"callback":"1","callback.param":"\#(String(repeating: "p", count: 65))"}"#),
            #"{"regId":"v1"}"#,
        ]
        for body in cases {
            #expect(try harness.vivoPost("/message/send", body, token: token).vendorCode == 10050, "\(body)")
        }
        // A title of 40 English characters is within the limit; 20 Chinese characters too.
        let longASCII = valid.replacingOccurrences(
            of: #""title":"标题""#, with: #""title":"\#(String(repeating: "a", count: 40))""#)
        #expect(try harness.vivoPost("/message/send", longASCII, token: token).vendorCode == 0)

        let saved = try harness.vivoPost("/message/saveListPayload", MockHarness.vivoMessage(), token: token)
        let taskID = try #require(saved.json?["taskId"] as? String)
        let listCases = [
            #"{"regIds":["only-one"],"taskId":"\#(taskID)","requestId":"r"}"#,
            #"{"regIds":\#(MockHarness.tokenArray((0...1000).map { "v\($0)" })),"taskId":"\#(taskID)","requestId":"r"}"#,
            #"{"regIds":["v1","v2"],"taskId":"404","requestId":"r"}"#,
        ]
        for body in listCases {
            #expect(try harness.vivoPost("/message/pushToList", body, token: token).vendorCode == 10050)
        }
        harness.server.revokeAccessTokens()
        let revoked = try harness.vivoPost(
            "/message/pushToList", #"{"regIds":["v1","v2"],"taskId":"\#(taskID)","requestId":"r"}"#, token: token)
        #expect(revoked.vendorCode == 10000)
        #expect(harness.server.receivedAndroidMessages().map(\.tokens) == [["v1"]])
    }
}

@Suite("Android look-alikes: Xiaomi, OPPO and vivo credentials")
struct MockOEMCredentialTests {
    @Test("apps trusted at run time are served from then on; the configuration's new fields are optional in JSON")
    func trustAndConfiguration() throws {
        let harness = try MockHarness()
        let xiaomi = LookAlikeConfiguration.XiaomiApp(appSecret: "late-secret", packageName: "com.example.late")
        let fields = [("restricted_package_name", "com.example.late"), ("title", "t"), ("description", "d")]
        #expect(try harness.xiaomiSend(["a"], key: "late-secret", fields: fields).vendorCode == 21301)
        harness.server.trustXiaomiApp(xiaomi)
        #expect(try harness.xiaomiSend(["a"], key: "late-secret", fields: fields).vendorCode == 0)

        let oppo = LookAlikeConfiguration.OppoApp(appKey: "late-key", masterSecret: "late-master")
        #expect(try harness.oppoAuth(appKey: oppo.appKey, secret: oppo.masterSecret).vendorCode == 14)
        harness.server.trustOppoApp(oppo)
        #expect(try harness.oppoAuth(appKey: oppo.appKey, secret: oppo.masterSecret).vendorCode == 0)

        let vivo = LookAlikeConfiguration.VivoApp(appID: "777", appKey: "late-key", appSecret: "late-secret")
        #expect(try harness.vivoAuth(appID: "777", appKey: "late-key", secret: "late-secret").vendorCode == 10205)
        harness.server.trustVivoApp(vivo)
        #expect(try harness.vivoAuth(appID: "777", appKey: "late-key", secret: "late-secret").vendorCode == 0)

        let configuration = harness.setup.configuration()
        #expect(configuration.xiaomiApps == [harness.setup.xiaomiApp])
        #expect(configuration.oppoApps == [harness.setup.oppoApp])
        #expect(configuration.vivoApps == [harness.setup.vivoApp])
        #expect(harness.setup.xiaomiApp.packageName == MockHarness.bundleID)
        let data = try JSONEncoder().encode(configuration)
        #expect(try JSONDecoder().decode(LookAlikeConfiguration.self, from: data) == configuration)
        let partial = try JSONDecoder().decode(
            LookAlikeConfiguration.self,
            from: Data(#"{"vivoApps":[{"appID":"1","appKey":"k","appSecret":"s"}]}"#.utf8))
        #expect(partial.vivoApps == [.init(appID: "1", appKey: "k", appSecret: "s")])
        #expect(partial.xiaomiApps.isEmpty)
        #expect(partial.oppoApps.isEmpty)
    }

    @Test("the request log names the service, its code, target and token count")
    func requestLog() throws {
        let lines = LogLines()
        let harness = try MockHarness(configure: { $0.logRequests = true }, requestLog: { lines.append($0) })
        _ = try harness.xiaomiSend(["mi1", "mi2"])
        _ = try harness.oppoAuth(secret: "wrong")
        _ = try harness.vivoPost("/message/send", MockHarness.vivoMessage(regID: "v1"), token: try harness.vivoToken())
        let logged = lines.all
        #expect(logged.count == 4)
        #expect(logged[0].contains(#""service":"xiaomi""#))
        #expect(logged[0].contains(#""target":"\#(harness.setup.xiaomiApp.packageName)""#))
        #expect(logged[0].contains(#""tokens":2"#))
        #expect(logged[1].contains(#""service":"oppo""#))
        #expect(logged[1].contains(#""code":"16""#))
        #expect(logged[3].contains(#""service":"vivo""#))
        #expect(logged[3].contains(#""path":"/message/send""#))
        #expect(logged[3].contains(#""target":"\#(harness.setup.vivoApp.appID)""#))
    }

    @Test("a setup saved before the Xiaomi, OPPO and vivo look-alikes gains their apps on load, and keeps them")
    func oldSetupFileGainsVendorApps() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tuisong-setup-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("setup.json").path
        let setup = try LookAlikeLocalSetup.generate(bundleID: "com.example.old")
        try setup.save(to: path)
        var saved = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as? [String: Any])
        for key in ["xiaomiApp", "oppoApp", "vivoApp"] { saved[key] = nil }
        try JSONSerialization.data(withJSONObject: saved).write(to: URL(fileURLWithPath: path))

        let loaded = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.old")
        #expect(loaded.keyID == setup.keyID)
        #expect(loaded.huaweiClient == setup.huaweiClient)
        #expect(loaded.xiaomiApp.packageName == "com.example.old")
        let again = try LookAlikeLocalSetup.loadOrGenerate(at: path, bundleID: "com.example.old")
        #expect(again.xiaomiApp == loaded.xiaomiApp)
        #expect(again.oppoApp == loaded.oppoApp)
        #expect(again.vivoApp == loaded.vivoApp)
    }
}
