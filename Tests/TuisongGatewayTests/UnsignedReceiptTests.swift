import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongGatewayTestKit
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// Issue #42: the receipts of the services that do not sign them (Xiaomi, OPPO, vivo), posted to
/// a running gateway as each service posts them. The only proof is the `param` Tuisong sent: a
/// MAC, recomputed here from the master key by the documented recipe, over the message and the
/// one token of a one-token request, or over a recorded send of a batch.
@Suite(.serialized) struct UnsignedReceiptTests {
    static let publicURL = "https://push.example.com"

    /// The MAC of a tag (16 base64url characters of HMAC-SHA256 under the app's receipt secret,
    /// itself HMAC-SHA256 of the receipts root under `tag:app:<id>`).
    static func mac(_ gw: RunningGateway, appID: Int64, _ text: String) throws -> String {
        let file = try String(contentsOf: gw.directory.appending(path: "master.key"), encoding: .utf8)
        let master = try SecretBox(
            key: Array(try #require(Data(base64Encoded: file.trimmingCharacters(in: .whitespacesAndNewlines)))))
        let secret = HMAC.sha256(key: master.derivedKey("receipts"), message: Array("tag:app:\(appID)".utf8))
        let mac = HMAC.sha256(key: secret, message: Array(text.utf8))
        return String(
            Data(mac).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "").prefix(16))
    }

    func register(_ gw: RunningGateway, _ key: String, _ token: String, _ channel: String, tag: String) async throws {
        let r = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token)", key: key, json: ["channel": channel, "tags": [tag]])
        #expect(r.status == 201, "\(r.text)")
    }

    func push(_ gw: RunningGateway, _ key: String, tag: String) async throws -> Int64 {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tag": tag], "notification": ["alert": "hi"]])
        let id = Int64(try #require(push.jsonObject["message_id"] as? Int))
        _ = try await gw.completed(messageID: id)
        return id
    }

    func form(_ fields: [String: String]) -> Data {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._*")
        return Data(
            fields.map { "\($0)=\($1.addingPercentEncoding(withAllowedCharacters: allowed) ?? "")" }.joined(
                separator: "&"
            ).utf8)
    }

    /// The message's counts once every POST answered so far is recorded (by the digest).
    func counts(_ gw: RunningGateway, _ id: Int64, _ channel: PushChannel) async throws -> ReceiptCounts? {
        await gw.runtime.receiptsDigested()
        return try await gw.runtime.store.receiptCounts(messageID: id)[channel]
    }

    func invalidReason(_ gw: RunningGateway, appID: Int64, _ token: String, _ channel: PushChannel) async throws
        -> String?
    {
        await gw.runtime.receiptsDigested()
        let device = try await gw.runtime.store.device(
            appID: appID, token: try #require(DeviceToken(token, channel: channel)))
        return device?.invalidReason
    }

    /// Xiaomi: a batch names its recorded send in `extra.callback.param`; `type` 1, 2 and 16
    /// are arrived, clicked and an invalid target (invalidated as an APNs 410).
    @Test(arguments: PluginStoreBackend.allCases)
    func xiaomiReceiptsAreVerifiedAgainstTheirSend(_ database: PluginStoreBackend) async throws {
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.xiaomi")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        for token in ["xm-r-1", "xm-r-2", "xm-r-3"] { try await register(gw, key, token, "xiaomi", tag: "r") }
        try await register(gw, key, "xm-elsewhere", "xiaomi", tag: "other")
        let id = try await push(gw, key, tag: "r")

        let sent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .xiaomi })
        let fields = Dictionary(
            String(decoding: sent.body, as: UTF8.self).split(separator: "&").map { pair in
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? ""
                }
                return (parts[0], parts.count > 1 ? parts[1] : "")
            }, uniquingKeysWith: { a, _ in a })
        #expect(fields["extra.callback"] == "\(Self.publicURL)/receipts/xiaomi/\(appID)")
        #expect(fields["extra.callback.type"] == "19")
        let param = try #require(fields["extra.callback.param"])
        #expect(param.count <= 64)
        let sendID = try #require(Int64(param.dropFirst().prefix { $0 != "." }))
        #expect(param == "s\(sendID)." + (try Self.mac(gw, appID: appID, "send:\(sendID)")))

        let url = "\(gw.baseURL)/receipts/xiaomi/\(appID)"
        func receipt(_ entries: [String: [String: Any]]) throws -> Data {
            form(["data": String(decoding: try JSONSerialization.data(withJSONObject: entries), as: UTF8.self)])
        }
        func entry(_ param: String, type: Int, targets: String, at: Int64 = 1_750_000_000_000) -> [String: Any] {
            ["param": param, "type": type, "targets": targets, "jobkey": "", "barStatus": "Enable", "timestamp": at]
        }
        func post(_ url: String, _ body: Data) async throws -> TestResponse {
            try await http("POST", url, body: body, contentType: "application/x-www-form-urlencoded")
        }

        // A forged param, or this app's param posted to another app's URL: 401, nothing kept.
        let forged = try await post(
            url, try receipt(["m1": entry("s\(sendID).AAAAAAAAAAAAAAAA", type: 1, targets: "xm-r-1")]))
        #expect(forged.status == 401)
        #expect(forged.jsonObject["result"] as? String == "error")
        let otherApp = try await post(
            "\(gw.baseURL)/receipts/xiaomi/\(otherAppID)", try receipt(["m1": entry(param, type: 1, targets: "xm-r-1")])
        )
        #expect(otherApp.status == 401)
        #expect(try await counts(gw, id, .xiaomi) == nil)

        let body = try receipt([
            "m1": entry(param, type: 1, targets: "xm-r-1,xm-r-2"),
            "m2": entry(param, type: 2, targets: "xm-r-1"),
            // After the device registered (a receipt older than its registration invalidates nothing).
            "m3": entry(param, type: 16, targets: "xm-r-3", at: 4_000_000_000_000),
        ])
        let accepted = try await post(url, body)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["result"] as? String == "ok")
        // Repeated: counted once.
        #expect(try await post(url, body).status == 200)
        // The param moved onto a token its send did not go to: answered, ignored.
        let replay = try await post(url, try receipt(["m4": entry(param, type: 1, targets: "xm-elsewhere")]))
        #expect(replay.status == 200)

        #expect(
            try await counts(gw, id, .xiaomi) == ReceiptCounts(arrived: 2, clicked: 1, reasons: ["invalid_target": 1]))
        #expect(try await invalidReason(gw, appID: appID, "xm-r-3", .xiaomi) == "receipt:invalid_target")
        #expect(try await invalidReason(gw, appID: appID, "xm-elsewhere", .xiaomi) == nil)
        let states = try await gw.runtime.store.receiptStates(messageID: id, tokens: ["xm-elsewhere"])
        #expect(states.isEmpty)

        // A param that verifies but names no send of the app (gone with its message): answered, counted.
        let gone = "s\(sendID + 1000)." + (try Self.mac(gw, appID: appID, "send:\(sendID + 1000)"))
        #expect(try await post(url, try receipt(["m5": entry(gone, type: 1, targets: "xm-r-1")])).status == 200)
        #expect(try await post(url, Data("data=%7Bnot-json".utf8)).status == 400)
        #expect(try await post(url, Data(repeating: UInt8(ascii: "a"), count: (2 << 20) + 1)).status == 413)
        await gw.runtime.receiptsDigested()
        let metrics = try await http("GET", "\(gw.baseURL)/metrics").text
        #expect(metrics.contains(#"tuisong_receipts_total{channel="xiaomi",outcome="not_of_send"} 1"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="xiaomi",outcome="unknown"} 1"#))
        #expect(metrics.contains(#"tuisong_receipts_total{channel="xiaomi",outcome="refused"} 2"#))
        // (How many of the first POST's count as repeated depends on whether Xiaomi's entries
        // are read click before arrival: a click records its arrival.)
        #expect(metrics.contains(#"tuisong_receipts_total{channel="xiaomi",outcome="repeated"}"#))
    }

    /// OPPO: each message of a batch carries `call_back_url` and a `call_back_parameter` MAC'd
    /// with its own registration id, so a parameter moved onto another id does not verify.
    @Test func oppoReceiptsAreBoundToTheirRegistrationID() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.oppo")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        for token in ["op-r-1", "op-r-2"] { try await register(gw, key, token, "oppo", tag: "r") }
        let id = try await push(gw, key, tag: "r")

        let sent = try #require(gw.mock.receivedAndroidMessages().first { $0.service == .oppo })
        let field = try #require(
            String(decoding: sent.body, as: UTF8.self).split(separator: "&").first { $0.hasPrefix("messages=") })
        let text = try #require(
            String(field.dropFirst("messages=".count)).replacingOccurrences(of: "+", with: " ").removingPercentEncoding)
        let list = try #require(try JSONValue(parsing: text).arrayValue)
        var params: [String: String] = [:]
        for message in list {
            let token = try #require(message["target_value"]?.stringValue)
            #expect(
                message["notification"]?["call_back_url"]?.stringValue == "\(Self.publicURL)/receipts/oppo/\(appID)")
            let param = try #require(message["notification"]?["call_back_parameter"]?.stringValue)
            #expect(param.count <= 50)
            #expect(param == "t\(id)." + (try Self.mac(gw, appID: appID, "message:\(id):token:\(token)")))
            params[token] = param
        }
        let param1 = try #require(params["op-r-1"])
        let param2 = try #require(params["op-r-2"])

        func events(_ list: [(param: String, target: String, type: String)]) throws -> Data {
            try JSONSerialization.data(
                withJSONObject: list.map {
                    [
                        "messageId": "m", "appId": "a", "taskId": "m", "registrationIds": $0.target,
                        // After the devices registered (an older receipt invalidates nothing).
                        "eventTime": "4000000000000", "param": $0.param, "eventType": $0.type,
                    ]
                })
        }
        let url = "\(gw.baseURL)/receipts/oppo/\(appID)"
        func post(_ url: String, _ body: Data) async throws -> TestResponse {
            try await http("POST", url, body: body, contentType: "application/json")
        }
        // op-r-1's parameter moved onto op-r-2, a forged one, another app's URL: 401, nothing kept.
        let replay = try await post(url, try events([(param1, "op-r-2", "push_arrive")]))
        #expect(replay.status == 401)
        #expect(replay.jsonObject["code"] as? Int == 401)
        #expect(try await post(url, try events([("t\(id).AAAAAAAAAAAAAAAA", "op-r-1", "push_arrive")])).status == 401)
        #expect(
            try await post("\(gw.baseURL)/receipts/oppo/\(otherAppID)", try events([(param1, "op-r-1", "push_arrive")]))
                .status == 401)
        #expect(try await counts(gw, id, .oppo) == nil)

        let body = try events([
            (param1, "op-r-1", "push_arrive"), (param1, "op-r-1", "click"), (param2, "op-r-2", "regid_invalid"),
        ])
        let accepted = try await post(url, body)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["code"] as? Int == 0)
        #expect(try await post(url, body).status == 200)
        #expect(
            try await counts(gw, id, .oppo) == ReceiptCounts(arrived: 1, clicked: 1, reasons: ["invalid_target": 1]))
        #expect(try await invalidReason(gw, appID: appID, "op-r-2", .oppo) == "receipt:invalid_target")
        #expect(try await post(url, Data(#"{"not":"an array"}"#.utf8)).status == 400)
    }

    /// vivo: the receipt id made in vivo's console (the credential's `receipt_id`; local mode's
    /// credential has one) goes in `extra.callback`; a single push's `callback.param` is bound
    /// to its regId, a batch's names its recorded send.
    @Test func vivoReceiptsNameTheConsoleReceiptIDAndAreVerified() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL])
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.vivo")
        let (otherAppID, _) = try await gw.createApp(bundleID: "com.example.other")
        try await register(gw, key, "vv-single", "vivo", tag: "one")
        for token in ["vv-r-1", "vv-r-2"] { try await register(gw, key, token, "vivo", tag: "r") }
        try await register(gw, key, "vv-elsewhere", "vivo", tag: "other")

        let single = try await push(gw, key, tag: "one")
        let singleSent = try #require(
            gw.mock.receivedAndroidMessages().first { $0.service == .vivo && $0.tokens == ["vv-single"] })
        let singleExtra = try #require(try JSONValue(parsing: singleSent.body)["extra"])
        #expect(singleExtra["callback"]?.stringValue == LookAlikeLocalSetup.vivoReceiptID)
        let singleParam = try #require(singleExtra["callback.param"]?.stringValue)
        #expect(singleParam == "t\(single)." + (try Self.mac(gw, appID: appID, "message:\(single):token:vv-single")))

        let batch = try await push(gw, key, tag: "r")
        let batchSent = try #require(
            gw.mock.receivedAndroidMessages().first { $0.service == .vivo && $0.tokens.count == 2 })
        let batchParam = try #require(try JSONValue(parsing: batchSent.body)["extra"]?["callback.param"]?.stringValue)
        #expect(batchParam.hasPrefix("s") && batchParam.count <= 64)

        func receipt(_ tasks: [String: (param: String, targets: String, type: Int)]) throws -> Data {
            try JSONSerialization.data(
                withJSONObject: tasks.mapValues {
                    ["param": $0.param, "targets": $0.targets, "ackTime": 1_750_000_000_000, "ackType": $0.type]
                })
        }
        let url = "\(gw.baseURL)/receipts/vivo/\(appID)"
        func post(_ url: String, _ body: Data) async throws -> TestResponse {
            try await http("POST", url, body: body, contentType: "application/json")
        }
        #expect(try await post(url, try receipt(["1": (singleParam, "vv-r-1", 1)])).status == 401)
        let otherApp = try await post(
            "\(gw.baseURL)/receipts/vivo/\(otherAppID)", try receipt(["1": (singleParam, "vv-single", 1)]))
        #expect(otherApp.status == 401)
        #expect(otherApp.jsonObject["result"] as? Int == 401)

        let body = try receipt([
            "1": (singleParam, "vv-single", 1), "2": (batchParam, "vv-r-1,vv-r-2", 1), "3": (batchParam, "vv-r-2", 2),
        ])
        let accepted = try await post(url, body)
        #expect(accepted.status == 200, "\(accepted.text)")
        #expect(accepted.jsonObject["result"] as? Int == 0)
        #expect(try await post(url, body).status == 200)
        #expect(try await post(url, try receipt(["4": (batchParam, "vv-elsewhere", 1)])).status == 200)
        #expect(try await counts(gw, single, .vivo) == ReceiptCounts(arrived: 1))
        #expect(try await counts(gw, batch, .vivo) == ReceiptCounts(arrived: 2, clicked: 1))
        #expect(try await post(url, Data("[]".utf8)).status == 400)
    }
}
