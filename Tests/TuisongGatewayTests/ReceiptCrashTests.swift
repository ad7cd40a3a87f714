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

        // Half the messages' receipts all recorded and acknowledged before the kill.
        let settled = try posts(messages[..<5])
        for post in settled { #expect(await send(post)) }
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
        for id in messages { #expect(try await arrived(id) == perMessage) }
    }
}
