import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit
import TuisongTransportKit

/// kill -9 while Huawei's receipts are being recorded, then restart (issue #42): what was
/// counted before stays counted unchanged, nothing acknowledged is lost, and the service's
/// retries of what it was not sure of count once. Real processes, as `CrashRecoveryTests`:
/// `tuisong apns-mock` as APNs, `tuisong serve` twice, receipts posted signed as Huawei signs.
@Suite(.serialized) struct ReceiptCrashTests {
    /// One Huawei receipt POST: 100 statuses of one message, each a phone that showed it.
    struct ReceiptPost: Sendable {
        var messageID: Int
        var tokens: [String]
        var body: Data
    }

    /// Statuses the gateway acknowledged (200), by message.
    final class Acknowledged: Sendable {
        let byMessage = Mutex<[Int: Int]>([:])
    }

    @Test func receiptCountsSurviveKill9AndARestartUnchanged() async throws {
        let crash = CrashRecoveryTests()
        guard
            let stage = try await CrashRecoveryTests.Stage.make(
                crash, name: "receipts", latencyMilliseconds: 1, delivery: [:])
        else { return }
        defer { stage.tearDown() }
        let (env, port, key, appID) = (stage.env, stage.port, stage.key, Int64(stage.appID))
        let base = "http://127.0.0.1:\(port)"

        // What the operator entered in AppGallery Connect, as `credential show` prints it.
        let shown =
            try JSONSerialization.jsonObject(
                with: Data(try crash.run(["credential", "show", "--app", "\(appID)"], env).utf8)) as? [String: Any]
        let huawei = try #require((shown?["receipts"] as? [[String: String]])?.first { $0["channel"] == "huawei" })
        let userName = try #require(huawei["callback_user_name"])
        let callbackKey = try #require(huawei["callback_key"])
        // The tags the sends carried: MACs under the app's key, derived from the master key.
        let master = try String(contentsOf: stage.directory.appending(path: "master.key"), encoding: .utf8)
        let box = try SecretBox(
            key: Array(try #require(Data(base64Encoded: master.trimmingCharacters(in: .whitespacesAndNewlines)))))
        let keys = ReceiptKeys(root: box.derivedKey("receipts"))

        let first = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        defer { first.terminate() }
        try await crash.waitForHealth(port)
        var messages: [Int] = []
        for n in 1...10 {
            let push = try await http(
                "POST", "\(base)/api/v1/push", key: key,
                json: ["audience": ["tokens": [token(n, prefix: "e0")]], "notification": ["alert": "\(n)"]])
            messages.append(try #require(push.jsonObject["message_id"] as? Int))
        }
        let perMessage = 1000
        func posts(_ ids: ArraySlice<Int>) throws -> [ReceiptPost] {
            try ids.flatMap { id in
                try stride(from: 0, to: perMessage, by: 100).map { start in
                    let tokens = (start..<start + 100).map { "phone-\(id)-\($0)" }
                    let tag = keys.tag(appID: appID, messageID: Int64(id))
                    let statuses = tokens.map {
                        [
                            "biTag": tag, "appid": "10086", "token": $0, "status": 0,
                            "timestamp": 1_750_000_000_000, "requestId": "r\(id)",
                        ] as [String: Any]
                    }
                    return ReceiptPost(
                        messageID: id, tokens: tokens,
                        body: try JSONSerialization.data(withJSONObject: ["statuses": statuses]))
                }
            }
        }
        @Sendable func send(_ post: ReceiptPost) async -> Bool {
            let signature = ReceiptEndToEndTests.huaweiSignature(
                userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString)
            let answer = try? await http(
                "POST", "\(base)/receipts/huawei/\(appID)", body: post.body, contentType: "application/json",
                headers: ["X-HUAWEI-CALLBACK-ID": signature])
            return answer?.status == 200
        }
        func arrived(_ id: Int) async throws -> Int? {
            let status = try await http("GET", "\(base)/api/v1/messages/\(id)", key: key).jsonObject
            return (status["counts"] as? [String: Int])?["arrived"]
        }
        /// Returns once every POST answered so far is digested (the inbox is empty).
        func digested() async throws {
            try await waitUntil("the receipt inbox digested", within: .seconds(60), every: .milliseconds(20)) {
                try await Self.waitingStatuses(base) == 0
            }
        }

        // Half the messages' receipts all recorded and acknowledged before the kill.
        let settled = try posts(messages[..<5])
        for post in settled { #expect(await send(post)) }
        try await digested()
        var before: [Int: Int] = [:]
        for id in messages[..<5] { before[id] = try await arrived(id) }
        #expect(before.values.allSatisfy { $0 == perMessage })

        // The other half's receipts streaming in when the process is killed.
        let streaming = try posts(messages[5...])
        let acknowledged = Acknowledged()
        let stream = Task {
            for post in streaming {
                guard await send(post) else { return }
                acknowledged.byMessage.withLock { $0[post.messageID, default: 0] += post.tokens.count }
            }
        }
        try await waitUntil("some streaming receipts acknowledged", within: .seconds(60), every: .milliseconds(5)) {
            acknowledged.byMessage.withLock { $0.values.reduce(0, +) } >= 500
        }
        first.kill9()
        await stream.value
        let acknowledgedAtKill = acknowledged.byMessage.withLock { $0 }
        #expect(
            acknowledgedAtKill.values.reduce(0, +) < streaming.count * 100,
            "the kill must land while receipts are still coming")

        let second = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        defer { second.terminate() }
        try await crash.waitForHealth(port)
        // What was kept and not yet digested at the kill is digested now.
        try await digested()
        for id in messages[..<5] {
            #expect(try await arrived(id) == before[id], "message \(id)'s counts changed across the restart")
        }
        for id in messages[5...] {
            let count = try #require(try await arrived(id))
            #expect(count >= acknowledgedAtKill[id, default: 0], "an acknowledged receipt of \(id) was lost")
            #expect(count <= perMessage)
        }
        // Huawei sends again what it was not sure of (all of it, here): each counts once.
        for post in settled + streaming { #expect(await send(post)) }
        try await digested()
        for id in messages { #expect(try await arrived(id) == perMessage) }
    }

    /// kill -9 between a POST's inbox row and its digest: receipts answered and kept but not yet
    /// recorded (the digest waits while pushes are sending: here the look-alike answers each push
    /// after 20 seconds and `receipts.digest_max_lag_seconds` is an hour) are recorded once after
    /// the restart, and the service's retries of them count nothing again.
    @Test func receiptsKeptButNotYetDigestedSurviveKill9AndCountOnce() async throws {
        let crash = CrashRecoveryTests()
        guard
            let stage = try await CrashRecoveryTests.Stage.make(
                crash, name: "receipt-inbox", latencyMilliseconds: 20_000, delivery: [:])
        else { return }
        defer { stage.tearDown() }
        let (port, key, appID) = (stage.port, stage.key, Int64(stage.appID))
        var env = stage.env
        env["TUISONG_RECEIPTS_DIGEST_MAX_LAG_SECONDS"] = "3600"
        let base = "http://127.0.0.1:\(port)"
        let shown =
            try JSONSerialization.jsonObject(
                with: Data(try crash.run(["credential", "show", "--app", "\(appID)"], env).utf8)) as? [String: Any]
        let huawei = try #require((shown?["receipts"] as? [[String: String]])?.first { $0["channel"] == "huawei" })
        let userName = try #require(huawei["callback_user_name"])
        let callbackKey = try #require(huawei["callback_key"])
        let master = try String(contentsOf: stage.directory.appending(path: "master.key"), encoding: .utf8)
        let box = try SecretBox(
            key: Array(try #require(Data(base64Encoded: master.trimmingCharacters(in: .whitespacesAndNewlines)))))
        let keys = ReceiptKeys(root: box.derivedKey("receipts"))

        let first = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        defer { first.terminate() }
        try await crash.waitForHealth(port)
        var messages: [Int] = []
        for n in 1...3 {
            let push = try await http(
                "POST", "\(base)/api/v1/push", key: key,
                json: ["audience": ["tokens": [token(n, prefix: "e1")]], "notification": ["alert": "\(n)"]])
            messages.append(try #require(push.jsonObject["message_id"] as? Int))
        }
        let perMessage = 200
        var bodies: [Data] = []
        for id in messages {
            for start in stride(from: 0, to: perMessage, by: 100) {
                let tag = keys.tag(appID: appID, messageID: Int64(id))
                let statuses = (start..<start + 100).map {
                    [
                        "biTag": tag, "appid": "10086", "token": "phone-\(id)-\($0)", "status": 0,
                        "timestamp": 1_750_000_000_000, "requestId": "r\(id)",
                    ] as [String: Any]
                }
                bodies.append(try JSONSerialization.data(withJSONObject: ["statuses": statuses]))
            }
        }
        func send(_ body: Data) async throws -> Int {
            let signature = ReceiptEndToEndTests.huaweiSignature(
                userName: userName, key: callbackKey, timestamp: "1750000000123", nonce: UUID().uuidString)
            return try await http(
                "POST", "\(base)/receipts/huawei/\(appID)", body: body, contentType: "application/json",
                headers: ["X-HUAWEI-CALLBACK-ID": signature]
            ).status
        }
        func arrived(_ id: Int) async throws -> Int {
            let status = try await http("GET", "\(base)/api/v1/messages/\(id)", key: key).jsonObject
            return (status["counts"] as? [String: Int])?["arrived"] ?? 0
        }
        for body in bodies { #expect(try await send(body) == 200) }
        // Answered and kept, none recorded: the pushes are still sending.
        #expect(try await Self.waitingStatuses(base) == messages.count * perMessage)
        for id in messages { #expect(try await arrived(id) == 0) }
        first.kill9()

        // The pushes resume sending after the restart; with no lag allowed the digest does not wait.
        env["TUISONG_RECEIPTS_DIGEST_MAX_LAG_SECONDS"] = "0"
        let second = try CrashRecoveryTests.Spawned(["serve"], environment: env)
        // Its pushes wait on the mock's 20 s answers, which a graceful stop would wait for: nothing is
        // asked of the stop here.
        defer { second.kill9() }
        try await crash.waitForHealth(port)
        try await waitUntil("the kept receipts recorded", within: .seconds(60), every: .milliseconds(20)) {
            try await Self.waitingStatuses(base) == 0
        }
        for id in messages { #expect(try await arrived(id) == perMessage, "message \(id)") }
        // Huawei sends them again (it was not told before the kill, as far as it knows): once each.
        for body in bodies { #expect(try await send(body) == 200) }
        try await waitUntil("the retries digested", within: .seconds(60), every: .milliseconds(20)) {
            try await Self.waitingStatuses(base) == 0
        }
        for id in messages { #expect(try await arrived(id) == perMessage, "message \(id)") }
        let metrics = try await http("GET", "\(base)/metrics").text
        #expect(
            metrics.contains(#"tuisong_receipts_total{channel="huawei",outcome="repeated"} \#(bodies.count * 100)"#))
    }

    /// `tuisong_receipts_waiting`: statuses answered and not yet recorded.
    static func waitingStatuses(_ base: String) async throws -> Int {
        let metrics = try await http("GET", "\(base)/metrics").text
        let line = try #require(metrics.split(separator: "\n").first { $0.hasPrefix("tuisong_receipts_waiting ") })
        return Int(try #require(Double(line.split(separator: " ")[1])))
    }
}
