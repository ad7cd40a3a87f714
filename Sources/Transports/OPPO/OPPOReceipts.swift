import Foundation
import TuisongCore
import TuisongTransportKit

/// OPPO Push's receipts (消息回执, docs/reference/receipts.md): asked for per message with
/// `call_back_url` (at most 200 characters; registration-id pushes only) and
/// `call_back_parameter` (at most 50: Tuisong's tag). OPPO POSTs `application/json`, an array of
/// events `{"messageId","appId","taskId","registrationIds","eventTime","param","eventType"}`,
/// `registrationIds` comma-separated, `eventType` `push_arrive`, `click`, `regid_invalid`, ….
/// OPPO does not sign its POSTs: the `param` is the proof.
public enum OPPOReceipts {
    /// `call_back_url`'s limit.
    static let maxURLLength = 200
    /// A POST of many events, each naming up to 1,000 registration ids.
    static let bodyLimit = 2 << 20

    public static let declaration = ReceiptDeclaration(
        verifySignature: nil, bodyLimit: bodyLimit,
        parse: { (post) throws(ReceiptFormatError) -> [ServiceReceipt] in try parse(post.body) },
        answer: answer)

    static func parse(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        guard let events = (try? JSONValue(parsing: body))?.arrayValue else {
            throw ReceiptFormatError("the body is not a JSON array of events")
        }
        var receipts: [ServiceReceipt] = []
        for event in events {
            guard let type = event["eventType"]?.stringValue, let targets = event["registrationIds"]?.stringValue else {
                throw ReceiptFormatError("an event without its eventType or registrationIds")
            }
            receipts += ReceiptFields.receipts(
                targets: targets, tag: event["param"]?.stringValue ?? "", outcome: outcome(type),
                at: ReceiptFields.milliseconds(event["eventTime"]))
        }
        return receipts
    }

    /// OPPO's event types. Any other is kept as `oppo_<type>`.
    static func outcome(_ type: String) -> ReceiptOutcome {
        switch type {
        case "push_arrive": .arrived
        case "click": .clicked
        case "regid_invalid": .notShown(reason: "invalid_target", invalidatesDevice: true)
        default: .notShown(reason: "oppo_\(type.prefix(32))", invalidatesDevice: false)
        }
    }

    /// OPPO reads the HTTP status; the body follows its API's `{"code","message"}`.
    static func answer(_ answer: ReceiptAnswer) -> ReceiptResponse {
        switch answer {
        case .accepted: ReceiptResponse(status: 200, body: Array(#"{"code":0,"message":"Success"}"#.utf8))
        case .unauthorized:
            ReceiptResponse(status: 401, body: Array(#"{"code":401,"message":"param does not verify"}"#.utf8))
        case .malformed(let message):
            ReceiptResponse(
                status: 400, body: JSONValue.object(["code": 400, "message": .string(message)]).serialized())
        }
    }
}
