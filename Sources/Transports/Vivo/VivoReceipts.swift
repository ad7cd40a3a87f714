import Foundation
import TuisongCore
import TuisongTransportKit

/// vivo Push's receipts (回执, docs/reference/receipts.md): the operator adds the receipt
/// address `<public_url>/receipts/vivo/<app id>` in vivo's console, which makes a receipt id
/// (in effect about an hour later); each push names it in `extra.callback` with Tuisong's tag in
/// `extra.callback.param` (at most 64 characters). vivo POSTs JSON keyed by task id, each
/// `{"param","targets","ackTime","ackType"}`, `targets` the regIds comma-separated. vivo does
/// not sign its POSTs: the `param` is the proof.
public enum VivoReceipts {
    /// The credential option holding the receipt id (`credential add --receipt-id`).
    public static let receiptIDOption = "receipt_id"
    static let bodyLimit = 2 << 20

    public static let declaration = ReceiptDeclaration(
        verifySignature: nil, bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        answer: answer,
        consoleRegistration: { url, _ in ["url": url] })

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        guard let tasks = (try? JSONValue(parsing: body))?.objectValue else {
            throw ReceiptFormatError("the body is not a JSON object keyed by task id")
        }
        var receipts: [ServiceReceipt] = []
        for (_, task) in tasks {
            guard let targets = task["targets"]?.stringValue, let type = ReceiptFields.integer(task["ackType"]) else {
                throw ReceiptFormatError("a receipt without its targets or ackType")
            }
            receipts += ReceiptFields.receipts(
                targets: targets, tag: task["param"]?.stringValue ?? "", outcome: outcome(type),
                at: ReceiptFields.milliseconds(task["ackTime"]))
        }
        return receipts
    }

    /// vivo's `ackType`: 1 arrived, 2 clicked (unconfirmed from vivo's own page: any other is
    /// kept as `vivo_<type>` and invalidates nothing).
    static func outcome(_ type: Int64) -> ReceiptOutcome {
        switch type {
        case 1: .arrived
        case 2: .clicked
        default: .notShown(reason: "vivo_\(type)", invalidatesDevice: false)
        }
    }

    /// vivo reads the HTTP status; the body follows its API's `{"result","desc"}`.
    static func answer(_ answer: ReceiptAnswer) -> ReceiptResponse {
        switch answer {
        case .accepted: ReceiptResponse(status: 200, body: Array(#"{"result":0,"desc":"请求成功"}"#.utf8))
        case .unauthorized:
            ReceiptResponse(status: 401, body: Array(#"{"result":401,"desc":"callback.param does not verify"}"#.utf8))
        case .malformed(let message):
            ReceiptResponse(
                status: 400, body: JSONValue.object(["result": 400, "desc": .string(message)]).serialized())
        }
    }
}
