import Foundation
import TuisongCore
import TuisongTransportKit

/// Honor Push's message receipts (消息回执). Honor's send guide says its server posts them to the
/// app's server and that a send's `android.biTag` comes back in them; the receipt page itself
/// (body, header, codes) was not found (docs/reference/receipts.md, Honor), so they are read in
/// the shape of Huawei's V1 receipts, the API Honor's is a fork of: `{"statuses":[{"biTag",
/// "appid","token","status","timestamp","requestId"}]}`, up to 1,000 statuses, signed with the
/// callback user name and key of the app's receipt configuration, answered `{"errno","errmsg"}`.
/// A push asks Honor for receipts only when the app's Honor credential turns them on
/// (`receiptsOption`): an unknown field could make Honor refuse the whole send.
public enum HonorReceipts {
    /// The credential option that turns receipts on for the app (`receipts: on`).
    public static let receiptsOption = "receipts"

    /// 1,000 statuses of some 250 bytes each, with room to spare.
    static let bodyLimit = 1 << 20

    /// The signature's header: Honor's own name is not documented where searched, so a POST
    /// signed under either the name Honor's renaming would give or Huawei's verifies.
    static let signatures = [
        CallbackSignature(header: "x-honor-callback-id"), CallbackSignature(header: "x-huawei-callback-id"),
    ]

    public static let declaration = ReceiptDeclaration(
        verifySignature: { post, keys in
            signatures.contains { $0.verify(post, keys: keys, channel: HonorService.channel) }
        },
        bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        // The signature covers the header only: the body is checked cheaply and read by the digest.
        intakeCheck: { (body) throws(ReceiptFormatError) -> Int in try ReceiptStatuses.count(body) },
        answer: CallbackSignature.answer,
        consoleRegistration: CallbackSignature.registration(channel: HonorService.channel))

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        try ReceiptStatuses.pushKitV1(body, outcome: outcome)
    }

    /// The status codes, read as Huawei's table (Honor's is not confirmed). 0 is arrival; the
    /// others name Huawei's reasons but invalidate no device, since a code Honor means
    /// otherwise must not cost a working device; any other code is kept as `honor_<code>`.
    static func outcome(_ code: Int64) -> ReceiptOutcome {
        switch code {
        case 0: .arrived
        case 2: .notShown(reason: "uninstalled", invalidatesDevice: false)
        case 5: .notShown(reason: "other_user", invalidatesDevice: false)
        case 6: .notShown(reason: "notifications_disabled", invalidatesDevice: false)
        case 10: .notShown(reason: "inactive", invalidatesDevice: false)
        case 15: .notShown(reason: "replaced", invalidatesDevice: false)
        case 102: .notShown(reason: "frequency_capped", invalidatesDevice: false)
        case 201: .notShown(reason: "held_by_service", invalidatesDevice: false)
        default: .notShown(reason: "honor_\(code)", invalidatesDevice: false)
        }
    }

    /// Whether the app's Honor credential asks for receipts.
    static func isOn(_ credential: ChannelCredential) -> Bool { credential.options[receiptsOption] == "on" }
}
