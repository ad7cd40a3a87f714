import Foundation
import TuisongCore
import TuisongTransportKit

/// HarmonyOS Push Kit's message receipts (消息回执 V2, the only version scenario-specific
/// messages get: docs/reference/receipts.md): a POST of `{"statuses":[{"token","pushType",
/// "appPackageName","biTag","requestId","deliveryStatus":{"result","timestamp"}}]}` (a card
/// refresh has `formStatus {formId, result, timestamp}` instead), up to 100 statuses, signed with
/// `X-HUAWEI-CALLBACK-ID` as Huawei's are, answered `{"errno","errmsg"}`.
public enum HarmonyReceipts {
    /// The credential option naming the app's receipt configuration (`pushOptions.receiptId`).
    public static let receiptIDOption = "receipt_id"

    /// 100 statuses of some 400 bytes each, with room to spare.
    static let bodyLimit = 256 * 1024

    /// Its POSTs' signature, under the app's callback user name and key.
    static let signature = CallbackSignature(header: "x-huawei-callback-id")

    public static let declaration = ReceiptDeclaration(
        verifySignature: { post, keys in signature.verify(post, keys: keys, channel: HarmonyService.channel) },
        bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        // The signature covers the header only: the body is checked cheaply and read by the digest.
        intakeCheck: { (body) throws(ReceiptFormatError) -> Int in try ReceiptStatuses.count(body) },
        answer: CallbackSignature.answer,
        consoleRegistration: CallbackSignature.registration(channel: HarmonyService.channel))

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        try ReceiptStatuses.read(
            body, incomplete: ReceiptFormatError("a status without its token or deliveryStatus.result")
        ) { (reader) throws(JSONValue.ParseError) -> ServiceReceipt? in
            guard reader.peek == .object else {
                try reader.skipValue()
                return nil
            }
            var token: String?
            var tag: String?
            var requestID: String?
            var delivery: State?
            var form: State?
            try reader.beginObject()
            while let key = try reader.nextKey() {
                switch key {
                case "token": token = try ReceiptStatuses.string(&reader)
                case "biTag": tag = try ReceiptStatuses.string(&reader)
                // Kept only for a status without a tag (the fallback by request).
                case "requestId" where tag?.isEmpty ?? true: requestID = try ReceiptStatuses.string(&reader)
                case "deliveryStatus": delivery = try State(&reader)
                case "formStatus": form = try State(&reader)
                default: try reader.skipValue()
                }
            }
            // A card refresh's `formStatus` counts only where there is no `deliveryStatus`.
            guard let token, !token.isEmpty, let state = delivery ?? form, let code = state.result else { return nil }
            let tagged = !(tag?.isEmpty ?? true)
            return ServiceReceipt(
                tag: tag ?? "", token: token, outcome: outcome(code), at: state.at, requestID: tagged ? nil : requestID)
        }
    }

    /// A status's `deliveryStatus` or `formStatus`: `{result, timestamp}` (`formId` unread).
    private struct State {
        var result: Int64?
        var at: Date?

        init(_ reader: inout JSONReader) throws(JSONValue.ParseError) {
            guard reader.peek == .object else {
                try reader.skipValue()
                return
            }
            try reader.beginObject()
            while let key = try reader.nextKey() {
                switch key {
                case "result": result = try ReceiptStatuses.integer(&reader)
                case "timestamp": at = try ReceiptStatuses.milliseconds(&reader)
                default: try reader.skipValue()
                }
            }
        }
    }

    /// The result codes, read as Huawei's receipt status table (unconfirmed for V2 beyond 0,
    /// success: docs/reference/receipts.md); others are kept as `harmony_<code>`.
    static func outcome(_ code: Int64) -> ReceiptOutcome {
        switch code {
        case 0: .arrived
        case 2: .notShown(reason: "uninstalled", invalidatesDevice: true)
        case 6: .notShown(reason: "notifications_disabled", invalidatesDevice: false)
        case 10: .notShown(reason: "inactive", invalidatesDevice: true)
        case 15: .notShown(reason: "replaced", invalidatesDevice: false)
        case 102: .notShown(reason: "frequency_capped", invalidatesDevice: false)
        case 201: .notShown(reason: "held_by_service", invalidatesDevice: false)
        default: .notShown(reason: "harmony_\(code)", invalidatesDevice: false)
        }
    }
}
