import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongTransportKit

/// `POST /receipts/{channel}/{app id}`: the delivery receipts the services post, one route per
/// transport that declares receipts (`TransportDeclaration.receipts`), nothing per service
/// here. A POST is checked (the service's signature where it signs; every status's tag, a MAC
/// of its message under the app's key), read, recorded (`ReceiptWriter`, `ReceiptStore.recordReceipts`) and
/// answered in the service's shape. A forged, unsigned or another app's POST records nothing.
struct ReceiptRoutes: Sendable {
    let store: any ReceiptStore
    /// Where the POSTs' receipts are written (in turns, on SQLite).
    let writer: ReceiptWriter
    let registry: TransportRegistry
    let keys: ReceiptKeys
    /// The apps' callback credentials, for the services that sign.
    let callbackCredentials: ReceiptCallbackCredentialService
    let clock: any Clock
    let metrics: GatewayMetrics
    let logger: Logger

    func register(on router: Router) {
        for declaration in registry.declarations {
            guard let receipts = declaration.receipts else { continue }
            let channel = declaration.channel.channel
            router.add(.POST, "/receipts/\(channel.rawValue)/{app}", bodyLimit: receipts.bodyLimit) { request in
                await receive(request, channel: channel, receipts)
            }
        }
    }

    func receive(_ request: Request, channel: PushChannel, _ declaration: ReceiptDeclaration) async -> Response {
        func answer(_ answer: ReceiptAnswer) -> Response {
            let response = declaration.answer(answer)
            return Response(
                status: response.status, headers: ["Content-Type": response.contentType], body: response.body)
        }
        func refused() -> Response {
            metrics.receipts.increment([channel.rawValue, "refused"])
            return answer(.unauthorized)
        }
        guard let raw = request.pathParameters["app"], let appID = Int64(raw), appID > 0 else {
            return answer(.malformed("the app id in the path is a positive integer"))
        }
        var headers: [String: String] = [:]
        for field in request.headers { headers[field.name.lowercased()] = field.value }
        var post = ReceiptPost(headers: headers, body: request.body, appID: appID, now: clock.now)
        /// The app's credentials (nil: no such app, nothing verifies), cached or as stored now.
        func readCallbackCredentials(stored: Bool) async throws -> CallbackCredentials? {
            do {
                return stored
                    ? try await self.callbackCredentials.storedCredentials(appID: appID, channel: channel)
                    : try await self.callbackCredentials.credentials(appID: appID, channel: channel)
            } catch let error as StoreError where error.code == .notFound {
                return nil
            }
        }
        func unreadable(_ error: any Error) -> Response {
            logger.error(
                "receipt callback credentials unreadable",
                metadata: ["channel": "\(channel.rawValue)", "app": "\(appID)", "error": "\(error)"])
            return Response(status: 503, headers: ["Retry-After": "5"], body: [])
        }
        if declaration.usesCallbackCredentials {
            do {
                post.callbackCredentials = try await readCallbackCredentials(stored: false)
            } catch {
                return unreadable(error)
            }
        }
        if let verify = declaration.verifySignature, !verify(post, keys) {
            // The pair was cached: it may have been changed where this node was not told (another
            // node, the CLI). Checked once more against the stored one before refusing.
            var verified = false
            if let cached = post.callbackCredentials, self.callbackCredentials.cache != nil {
                do {
                    let stored = try await readCallbackCredentials(stored: true)
                    if stored != cached {
                        post.callbackCredentials = stored
                        verified = verify(post, keys)
                    }
                } catch {
                    return unreadable(error)
                }
            }
            guard verified else {
                logger.warning(
                    "receipt signature refused", metadata: ["channel": "\(channel.rawValue)", "app": "\(appID)"])
                return refused()
            }
        }
        let statuses: [ServiceReceipt]
        do {
            statuses = try declaration.parse(post)
        } catch {
            return answer(.malformed(error.message))
        }
        // Where the service signs its POST, a message's tag is enough: the targets are the
        // service's word. Where it does not, only a tag bound to the target proves a status: one
        // MAC'd with the token itself, or a recorded send's, taken only for that send's tokens.
        let signed = declaration.verifySignature != nil
        var receipts: [DeliveryReceipt] = []
        receipts.reserveCapacity(statuses.count)
        var untagged = 0
        var notOfSend = 0
        var unknownSends = 0
        var sends: [Int64: ReceiptSend?] = [:]
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
                if sends[sendID] == nil {
                    do {
                        sends[sendID] = .some(try await store.receiptSend(id: sendID))
                    } catch {
                        return unavailable(error, channel: channel)
                    }
                }
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
            case .message?, nil:
                untagged += 1
                continue
            }
            receipts.append(
                DeliveryReceipt(
                    messageID: messageID, token: status.token, channel: channel, outcome: status.outcome,
                    at: status.at ?? post.now))
        }
        if untagged > 0 {
            // Where the POST itself is signed, a status without Tuisong's tag is a push another
            // sender made with the same app (or one sent before receipts were on): ignored.
            // Where nothing but the tag proves a POST, it is refused whole.
            guard signed else {
                logger.warning(
                    "receipt tag refused", metadata: ["channel": "\(channel.rawValue)", "app": "\(appID)"])
                return refused()
            }
            metrics.receipts.increment([channel.rawValue, "unknown"], by: UInt64(untagged))
        }
        if unknownSends > 0 { metrics.receipts.increment([channel.rawValue, "unknown"], by: UInt64(unknownSends)) }
        if notOfSend > 0 {
            logger.warning(
                "receipt targets not of their send ignored",
                metadata: ["channel": "\(channel.rawValue)", "app": "\(appID)", "count": "\(notOfSend)"])
            metrics.receipts.increment([channel.rawValue, "not_of_send"], by: UInt64(notOfSend))
        }
        do {
            let recording = try await writer.record(appID: appID, receipts)
            count(recording, channel: channel)
        } catch {
            return unavailable(error, channel: channel)
        }
        return answer(.accepted)
    }

    func unavailable(_ error: any Error, channel: PushChannel) -> Response {
        logger.error("receipts not recorded", metadata: ["channel": "\(channel.rawValue)", "error": "\(error)"])
        // The service sends them again.
        return Response(status: 503, headers: ["Retry-After": "5"], body: [])
    }

    func count(_ recording: ReceiptRecording, channel: PushChannel) {
        // By runs of one channel and outcome first (a POST's receipts are mostly of one), then by
        // outcome, then as the counter's label lists: no label array made per receipt.
        var byOutcome: [ReceiptOutcomeKey: UInt64] = [:]
        var run: (key: ReceiptOutcomeKey, count: UInt64)?
        for receipt in recording.recorded {
            if let last = run, last.key.channel == receipt.channel, last.key.outcome == receipt.outcome.name {
                run?.count += 1
                continue
            }
            if let last = run { byOutcome[last.key, default: 0] += last.count }
            run = (ReceiptOutcomeKey(channel: receipt.channel, outcome: receipt.outcome.name), 1)
        }
        if let last = run { byOutcome[last.key, default: 0] += last.count }
        var amounts: [[String]: UInt64] = [:]
        for (key, amount) in byOutcome { amounts[[key.channel.rawValue, key.outcome], default: 0] += amount }
        if recording.repeated > 0 { amounts[[channel.rawValue, "repeated"], default: 0] += UInt64(recording.repeated) }
        if recording.unknown > 0 { amounts[[channel.rawValue, "unknown"], default: 0] += UInt64(recording.unknown) }
        if !amounts.isEmpty { metrics.receipts.increment(amounts) }
    }
}

/// A receipt counter's labels before they are made a label list.
private struct ReceiptOutcomeKey: Hashable {
    var channel: PushChannel
    var outcome: String
}
