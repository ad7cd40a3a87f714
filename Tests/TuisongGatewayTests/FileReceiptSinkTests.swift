import Foundation
import Logging
import Testing
import TuisongLookAlikes

@testable import TuisongGateway

/// The look-alike command's `--receipts FILE` (bench/receipts.sh turns receipts on and off by
/// creating and removing FILE during one run): the configuration follows the file as it is now,
/// though it is read again only when it changed.
struct FileReceiptSinkTests {
    /// `credential show`'s output with Huawei's entry signed with `callbackKey`, a second Huawei
    /// entry (not the one that counts) and Honor's without a url.
    static func write(callbackKey: String, to path: String) throws {
        let entries: [[String: String]] = [
            [
                "channel": "huawei", "url": "http://127.0.0.1:1/receipts/huawei/1", "callback_user_name": "u",
                "callback_key": callbackKey,
            ],
            ["channel": "huawei", "url": "http://127.0.0.1:1/second"],
            ["channel": "honor", "url": ""],
        ]
        try JSONSerialization.data(withJSONObject: ["app_id": 1, "receipts": entries])
            .write(to: URL(fileURLWithPath: path))
    }

    @Test func theConfigurationFollowsTheFileAsItIsNow() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("file-sink-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("receipts.json").path
        let sink = try FileReceiptSink(path: path, logger: Logger(label: "test"))
        defer { sink.client.shutdown() }

        // Absent: no receipts.
        #expect(await sink.configuration(service: .huawei, tag: "t") == nil)

        try Self.write(callbackKey: "k", to: path)
        let huawei = try #require(await sink.configuration(service: .huawei, tag: "t"))
        #expect(huawei == .init(url: "http://127.0.0.1:1/receipts/huawei/1", callbackUserName: "u", callbackKey: "k"))
        // A channel's first entry counts; one without a url sends none.
        #expect(await sink.configuration(service: .honor, tag: "t") == nil)
        #expect(await sink.configuration(service: .xiaomi, tag: "t") == nil)

        // Changed: read again.
        try Self.write(callbackKey: "another", to: path)
        #expect(await sink.configuration(service: .huawei, tag: "t")?.callbackKey == "another")

        // Removed: none again.
        try FileManager.default.removeItem(atPath: path)
        #expect(await sink.configuration(service: .huawei, tag: "t") == nil)
    }
}
