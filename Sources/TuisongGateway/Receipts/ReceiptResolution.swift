import Foundation
import TuisongCore
import TuisongTransportKit

/// A POST's statuses turned into the receipts of Tuisong's messages, by the tag each carries:
/// where the service signs its POST, a message's tag is enough (the targets are the service's
/// word); where it does not, only a tag bound to the target proves a status: one MAC'd with the
/// token itself, or a recorded send's, taken only for that send's tokens. The routes resolve an
/// unsigned POST before answering (a status no tag proves refuses it whole); the digest
/// resolves every POST again when it records it.
struct ReceiptResolution {
    var receipts: [DeliveryReceipt] = []
    /// Statuses whose tag verifies for no message of the app.
    var untagged = 0
    /// Statuses naming a recorded send that is gone or not the app's.
    var unknownSends = 0
    /// Statuses of a verified send whose token the send did not go to.
    var notOfSend = 0

    init(
        _ statuses: [ServiceReceipt], channel: PushChannel, appID: Int64, signed: Bool, receivedAt: Date,
        keys: ReceiptKeys, sends store: any ReceiptStore
    ) async throws {
        receipts.reserveCapacity(statuses.count)
        var sends: [Int64: ReceiptSend?] = [:]
        // The messages of the requests untagged statuses name (a POST's come from a few).
        var requests: [String: Int64?] = [:]
        // A batch's statuses share one tag: its MAC is checked once a POST. (A `t` tag's MAC
        // covers its token, so each is checked on its own.)
        var resolvedTags: [String: ReceiptTag?] = [:]
        // The statuses of a request come together: most follow one of the same tag.
        var last: (tag: String, resolved: ReceiptTag?)?
        func resolve(_ status: ServiceReceipt) -> ReceiptTag? {
            if status.tag.first == "t" { return keys.resolve(tag: status.tag, appID: appID, token: status.token) }
            if let last, last.tag == status.tag { return last.resolved }
            let tag: ReceiptTag?
            if let known = resolvedTags[status.tag] {
                tag = known
            } else {
                tag = keys.resolve(tag: status.tag, appID: appID, token: status.token)
                resolvedTags[status.tag] = .some(tag)
            }
            last = (status.tag, tag)
            return tag
        }
        for status in statuses {
            let messageID: Int64
            switch resolve(status) {
            case .message(let id)? where signed, .token(let id)?:
                messageID = id
            case .send(let sendID)?:
                if sends[sendID] == nil { sends[sendID] = .some(try await store.receiptSend(id: sendID)) }
                guard let send = sends[sendID] ?? nil, send.appID == appID, send.channel == channel else {
                    unknownSends += 1
                    continue
                }
                guard send.contains(token: status.token) else {
                    // A verified param moved onto a token its request did not go to.
                    notOfSend += 1
                    continue
                }
                messageID = send.messageID
            case nil where signed && status.tag.isEmpty && status.requestID != nil:
                // No tag of Tuisong's: the service's request id, and the receipt's token, find
                // the delivery (the request is one the service accepted for the app's message).
                let requestID = status.requestID ?? ""
                if requests[requestID] == nil {
                    requests[requestID] = .some(
                        try await store.serviceRequestMessage(appID: appID, channel: channel, requestID: requestID))
                }
                guard let id = requests[requestID] ?? nil else {
                    untagged += 1
                    continue
                }
                messageID = id
            case .message?, nil:
                untagged += 1
                continue
            }
            receipts.append(
                DeliveryReceipt(
                    messageID: messageID, token: status.token, channel: channel, outcome: status.outcome,
                    at: status.at ?? receivedAt))
        }
    }
}
