import Foundation
import TuisongCore
import TuisongHTTPClient
import TuisongTransportKit

/// Xiaomi MiPush's receipts (回执, docs/reference/receipts.md): asked for per request with
/// `extra.callback` (the URL), `extra.callback.param` (Tuisong's tag, at most 64 characters)
/// and `extra.callback.type` (a bitmask: 1 arrived, 2 clicked, 16 invalid target; Tuisong asks
/// for 19). Xiaomi POSTs a form whose field `data` is JSON keyed by Xiaomi's message id, each
/// `{"param","type","targets","jobkey","barStatus","timestamp"}`, `targets` the regIds
/// comma-separated. Xiaomi does not sign its POSTs: the `param` is the proof.
public enum XiaomiReceipts {
    /// The receipt types Tuisong asks for: arrived (1), clicked (2), invalid target (16).
    static let callbackType = "19"
    /// Xiaomi merges many messages' receipts, each with up to 1,000 regIds, into one POST.
    static let bodyLimit = 2 << 20

    public static let declaration = ReceiptDeclaration(
        verifySignature: nil, bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        answer: answer)

    /// The form fields that ask for receipts of a request with `param`.
    static func fields(url: String, param: String) -> [(String, String)] {
        [("extra.callback", url), ("extra.callback.param", param), ("extra.callback.type", callbackType)]
    }

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        guard let form = FormEncoding.decode(body), let data = form.first(where: { $0.0 == "data" })?.1,
            let entries = (try? JSONValue(parsing: data))?.objectValue
        else {
            throw ReceiptFormatError("the body is not a form whose field data is a JSON object keyed by message id")
        }
        var receipts: [ServiceReceipt] = []
        for (_, entry) in entries {
            guard let type = ReceiptFields.integer(entry["type"]), let targets = entry["targets"]?.stringValue else {
                throw ReceiptFormatError("a receipt without its type or targets")
            }
            receipts += ReceiptFields.receipts(
                targets: targets, tag: entry["param"]?.stringValue ?? "", outcome: outcome(type),
                at: ReceiptFields.milliseconds(entry["timestamp"]))
        }
        return receipts
    }

    /// Xiaomi's receipt types. Any other is kept as `xiaomi_<type>`.
    static func outcome(_ type: Int64) -> ReceiptOutcome {
        switch type {
        case 1: .arrived
        case 2: .clicked
        case 16: .notShown(reason: "invalid_target", invalidatesDevice: true)
        default: .notShown(reason: "xiaomi_\(type)", invalidatesDevice: false)
        }
    }

    /// Xiaomi reads the HTTP status; the body follows its API's `{"result","code","description"}`.
    static func answer(_ answer: ReceiptAnswer) -> ReceiptResponse {
        switch answer {
        case .accepted:
            ReceiptResponse(status: 200, body: Array(#"{"result":"ok","code":0,"description":"success"}"#.utf8))
        case .unauthorized:
            ReceiptResponse(
                status: 401,
                body: Array(#"{"result":"error","code":401,"description":"callback.param does not verify"}"#.utf8))
        case .malformed(let message):
            ReceiptResponse(
                status: 400,
                body: JSONValue.object(["result": "error", "code": 400, "description": .string(message)]).serialized())
        }
    }
}
