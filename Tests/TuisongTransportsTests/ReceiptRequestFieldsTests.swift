import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongHarmony
@testable import TuisongHonor
@testable import TuisongHuawei

/// Issue #42: the receipt fields a Push Kit send carries, from the app's credential: Huawei's
/// `android.receipt_id` and HarmonyOS's `pushOptions.receiptId` beside the tag, Honor's
/// `android.biTag` only when the credential turns receipts on; and Honor's receipts read.
@Suite struct ReceiptRequestFieldsTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let content = PushContent(title: "Hi", body: "there")
    let headers = PushHeaders(PushOptions(), messageID: 42, appID: 7)
    let settings = ReceiptSettings(publicURL: "https://push.example.com", keys: ReceiptKeys(root: Array("r".utf8)))

    func credential(_ channel: PushChannel, _ options: [String: String]) -> ChannelCredential {
        ChannelCredential(id: 1, channel: channel, vendorAppID: "101", clientID: "c", secret: [], options: options)
    }

    @Test func huaweiNamesTheReceiptConfigurationBesideTheTag() throws {
        func android(_ service: HuaweiService, _ options: [String: String]) throws -> JSONValue? {
            let template = service.template(
                content: content, headers: headers, environment: .production,
                credential: credential(.huawei, options), now: now)
            return try JSONValue(parsing: template.body(tokens: ["t"]))["message"]?["android"]
        }
        let on = try android(HuaweiService(receipts: settings), ["receipt_id": "RCP1"])
        #expect(on?["receipt_id"] == "RCP1")
        #expect(on?["bi_tag"]?.stringValue == settings.tag(headers))
        #expect(try android(HuaweiService(receipts: settings), [:])?["receipt_id"] == nil)
        // Receipts off (no public URL): neither the tag nor the receipt id.
        let off = try android(HuaweiService(), ["receipt_id": "RCP1"])
        #expect(off?["receipt_id"] == nil && off?["bi_tag"] == nil)
    }

    @Test func harmonyNamesTheReceiptConfigurationBesideTheTag() throws {
        func options(_ service: HarmonyService, _ options: [String: String]) throws -> JSONValue? {
            let template = service.template(
                content: content, headers: headers, environment: .production,
                credential: credential(.harmony, options), now: now)
            return try JSONValue(parsing: template.body(tokens: ["t"]))["pushOptions"]
        }
        let on = try options(HarmonyService(receipts: settings), ["receipt_id": "RCP2"])
        #expect(on?["receiptId"] == "RCP2")
        #expect(on?["biTag"]?.stringValue == settings.tag(headers))
        #expect(try options(HarmonyService(receipts: settings), [:])?["receiptId"] == nil)
        #expect(try options(HarmonyService(), ["receipt_id": "RCP2"])?["receiptId"] == nil)
    }

    @Test func honorAsksForReceiptsOnlyWhenTheCredentialTurnsThemOn() throws {
        func android(_ service: HonorService, _ options: [String: String]) throws -> JSONValue? {
            let template = service.template(
                content: content, headers: headers, environment: .production,
                credential: credential(.honor, options), now: now)
            return try JSONValue(parsing: template.body(tokens: ["t"]))["android"]
        }
        #expect(
            try android(HonorService(receipts: settings), ["receipts": "on"])?["biTag"]
                == .string(settings.tag(headers)!))
        #expect(try android(HonorService(receipts: settings), [:])?["biTag"] == nil)
        #expect(try android(HonorService(), ["receipts": "on"])?["biTag"] == nil)
    }

    @Test func honorsReceiptsAreReadInHuaweisV1Shape() throws {
        let body =
            #"{"statuses":[{"biTag":"42.abc","appid":"104","token":"h1","status":0,"timestamp":1750000000123,"requestId":"r1"},{"biTag":"42.abc","token":"h2","status":2,"timestamp":1750000000123},{"token":"h3","status":77}]}"#
        let receipts = try HonorReceipts.parse(Array(body.utf8))
        #expect(receipts.map(\.token) == ["h1", "h2", "h3"])
        #expect(receipts.map(\.tag) == ["42.abc", "42.abc", ""])
        #expect(receipts[0].outcome == .arrived)
        // Honor's codes are read as Huawei's, but no unconfirmed code invalidates a device.
        #expect(receipts[1].outcome == .notShown(reason: "uninstalled", invalidatesDevice: false))
        #expect(receipts[2].outcome == .notShown(reason: "honor_77", invalidatesDevice: false))
        #expect(throws: ReceiptFormatError.self) {
            try HonorReceipts.parse(Array(#"{"statuses":[{"status":0}]}"#.utf8))
        }
    }
}
