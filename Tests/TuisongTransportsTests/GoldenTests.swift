import Foundation
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongFCM
@testable import TuisongHarmony
@testable import TuisongHonor
@testable import TuisongHuawei
@testable import TuisongOPPO
@testable import TuisongVivo
@testable import TuisongXiaomi

/// Each transport renders the same four kinds of `PushContent` (alert, background, badge-only,
/// data-only) into its own wire format, compared with the checked-in files under
/// `Golden/<service>/<kind>.json` (docs/reference/android.md §12 says what each does with each
/// kind; docs/reference/harmony.md §3 for HarmonyOS, whose file is `{"push-type", "body"}`). A
/// kind a service cannot carry is `{"skipped": "unsupported_content"}`.
/// `TUISONG_WRITE_GOLDEN=1 swift test --filter GoldenTests` rewrites the files.
@Suite struct GoldenTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let headers = PushHeaders(expiration: now.addingTimeInterval(3600))

    static let kinds: [(name: String, content: PushContent)] = [
        (
            "alert",
            PushContent(
                title: "Hi", body: "New message", badge: 3, sound: "default", thread: "chat-7",
                data: ["order": ["id": 42], "from": "ann"])
        ),
        ("background", PushContent(data: ["sync": "inbox"], background: true)),
        ("badge-only", PushContent(badge: 5)),
        ("data-only", PushContent(data: ["k": "v"])),
    ]

    static let services = ["apns", "fcm", "huawei", "honor", "xiaomi", "oppo", "vivo", "harmony"]

    static let skipped: JSONValue = ["skipped": "unsupported_content"]

    /// What `service`'s transport sends for `content` (one device, token `TOKEN`).
    static func render(_ service: String, _ content: PushContent) throws -> JSONValue {
        let batchSkips = content.isDataOnly && content.data.isEmpty
        switch service {
        case "apns":
            return try JSONValue(parsing: APNsPayload.render(content))
        case "fcm":
            return try JSONValue(parsing: FCMMessage.body(token: "TOKEN", content: content, headers: headers, now: now))
        case "huawei":
            if batchSkips { return skipped }
            return try JSONValue(
                parsing: HuaweiMessage.Template(content: content, headers: headers, badgeClass: "com.ex.Main", now: now)
                    .body(tokens: ["TOKEN"]))
        case "honor":
            if batchSkips { return skipped }
            return try JSONValue(
                parsing: HonorMessage.Template(content: content, headers: headers, badgeClass: "com.ex.Main", now: now)
                    .body(tokens: ["TOKEN"]))
        case "xiaomi":
            if batchSkips { return skipped }
            let fields = XiaomiMessage.fields(content: content, headers: headers, packageName: "com.ex", now: now)
            return .object(Dictionary(fields.map { ($0.0, JSONValue.string($0.1)) }) { $1 })
        case "oppo":
            if content.isDataOnly { return skipped }
            return OPPOMessage.notification(content: content, headers: headers, now: now)
        case "vivo":
            if content.isDataOnly { return skipped }
            return .object(VivoMessage.fields(content: content, headers: headers, now: now))
        case "harmony":
            let template = HarmonyMessage.Template(content: content, headers: headers, defaultCategory: "IM", now: now)
            return [
                "push-type": .int(Int64(template.pushType)),
                "body": try JSONValue(parsing: template.body(tokens: ["TOKEN"])),
            ]
        default:
            throw CocoaError(.featureUnsupported)
        }
    }

    static var directory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Golden")
    }

    @Test(arguments: services)
    func everyKindMatchesItsGoldenFile(_ service: String) throws {
        let write = ProcessInfo.processInfo.environment["TUISONG_WRITE_GOLDEN"] == "1"
        for (kind, content) in Self.kinds {
            let rendered = try Self.render(service, content)
            let file = Self.directory.appendingPathComponent(service).appendingPathComponent(kind + ".json")
            if write {
                try FileManager.default.createDirectory(
                    at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
                try Data((rendered.serializedString + "\n").utf8).write(to: file)
                continue
            }
            let golden = try JSONValue(parsing: Array(try Data(contentsOf: file)))
            #expect(rendered == golden, "\(service)/\(kind): \(rendered.serializedString)")
        }
    }

    /// The transports' own decisions agree with the golden files' skips.
    @Test func theTokenBatchServicesSayWhatTheyCarry() {
        #expect(!OPPOService().carriesDataMessages)
        #expect(!VivoService().carriesDataMessages)
        #expect(XiaomiService().carriesDataMessages)
        // HarmonyOS sends a badge-only push as its badge refresh message.
        #expect(HarmonyService().carriesBadgeOnly && !XiaomiService().carriesBadgeOnly)
    }
}
