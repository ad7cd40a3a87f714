import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongTransportKit

/// `POST /receipts/{channel}/{app id}`: the delivery receipts the services post, one route per
/// transport that declares receipts (`TransportDeclaration.receipts`), nothing per service
/// here. A POST is checked (the service's signature where it signs; where it does not, every
/// status's tag, a MAC of its message under the app's key), read (where the service signs the
/// header, only its structure is checked and its statuses counted: `ReceiptDeclaration.intakeCheck`), kept in the receipt inbox
/// (`ReceiptWriter.enqueue`, committed before the answer) and answered in the service's shape;
/// `ReceiptDigest` records its receipts later, off the pushes' path. A forged, unsigned or
/// another app's POST is refused and nothing is kept.
struct ReceiptRoutes: Sendable {
    let store: any ReceiptStore
    /// Where the POSTs are kept until digested (in turns, on SQLite).
    let writer: ReceiptWriter
    /// Told of each POST kept.
    let digest: ReceiptDigest
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
        let statusCount: Int
        if declaration.verifySignature != nil, let check = declaration.intakeCheck {
            // Signed over the header: the body's structure is checked and its statuses counted,
            // not read; the digest reads it (and counts one it cannot, `unreadable`).
            do {
                statusCount = try check(post.body)
            } catch {
                return answer(.malformed(error.message))
            }
        } else {
            let statuses: [ServiceReceipt]
            do {
                statuses = try declaration.parse(post)
            } catch {
                return answer(.malformed(error.message))
            }
            statusCount = statuses.count
            // Where nothing but each status's tag proves a POST (no signature), the tags are
            // checked before the answer: a POST with a status no tag proves is refused whole.
            if declaration.verifySignature == nil, !statuses.isEmpty {
                let resolution: ReceiptResolution
                do {
                    resolution = try await ReceiptResolution(
                        statuses, channel: channel, appID: appID, signed: false, receivedAt: post.now, keys: keys,
                        sends: store)
                } catch {
                    return unavailable(error, channel: channel)
                }
                guard resolution.untagged == 0 else {
                    logger.warning(
                        "receipt tag refused", metadata: ["channel": "\(channel.rawValue)", "app": "\(appID)"])
                    return refused()
                }
            }
        }
        guard statusCount > 0 else { return answer(.accepted) }
        // Durable before the answer; recorded by the digest, off the path of the pushes.
        do {
            try await writer.enqueue(
                ReceiptInboxPost(
                    channel: channel, appID: appID, receivedAt: post.now, statuses: statusCount, body: request.body))
        } catch {
            return unavailable(error, channel: channel)
        }
        digest.kept()
        return answer(.accepted)
    }

    func unavailable(_ error: any Error, channel: PushChannel) -> Response {
        logger.error("receipts not recorded", metadata: ["channel": "\(channel.rawValue)", "error": "\(error)"])
        // The service sends them again.
        return Response(status: 503, headers: ["Retry-After": "5"], body: [])
    }
}
