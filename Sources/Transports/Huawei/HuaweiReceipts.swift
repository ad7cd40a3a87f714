import Foundation
import TuisongCore
import TuisongTransportKit

/// Huawei Push Kit's message receipts (消息回执, V1: docs/reference/receipts.md): a POST of
/// `{"statuses":[{"biTag","appid","token","status","timestamp","requestId"}]}`, up to 1,000
/// statuses merged, signed with `X-HUAWEI-CALLBACK-ID` under the callback user name and key of
/// the app's receipt configuration in AppGallery Connect, answered `{"errno","errmsg"}`.
public enum HuaweiReceipts {
    /// The credential option naming the app's receipt configuration (`android.receipt_id`).
    public static let receiptIDOption = "receipt_id"

    /// 1,000 statuses of some 250 bytes each, with room to spare.
    static let bodyLimit = 1 << 20

    /// Its POSTs' signature, under the app's callback user name and key.
    static let signature = CallbackSignature(header: "x-huawei-callback-id")

    public static let declaration = ReceiptDeclaration(
        verifySignature: { post, keys in signature.verify(post, keys: keys, channel: HuaweiService.channel) },
        bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        // The signature covers the header only: the body is checked cheaply and read by the digest.
        intakeCheck: { (body) throws(ReceiptFormatError) -> Int in try ReceiptStatuses.count(body) },
        answer: CallbackSignature.answer,
        consoleRegistration: CallbackSignature.registration(channel: HuaweiService.channel))

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        try ReceiptStatuses.pushKitV1(body, outcome: outcome)
    }

    /// Huawei's receipt status codes (the table of "Message Receipt", HMS Push Kit guides).
    /// Codes this build does not know are kept as `huawei_<code>`.
    static func outcome(_ code: Int64) -> ReceiptOutcome {
        switch code {
        case 0: .arrived
        case 2: .notShown(reason: "uninstalled", invalidatesDevice: true)
        case 5: .notShown(reason: "other_user", invalidatesDevice: true)
        case 6: .notShown(reason: "notifications_disabled", invalidatesDevice: false)
        case 10: .notShown(reason: "inactive", invalidatesDevice: true)
        case 15: .notShown(reason: "replaced", invalidatesDevice: false)
        case 102: .notShown(reason: "frequency_capped", invalidatesDevice: false)
        case 201: .notShown(reason: "held_by_service", invalidatesDevice: false)
        default: .notShown(reason: "huawei_\(code)", invalidatesDevice: false)
        }
    }
}
