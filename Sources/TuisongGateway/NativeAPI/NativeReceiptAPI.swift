import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin
import TuisongTransportKit

/// `POST /api/v1/receipts`: an app's own delivery receipt, posted by the app on the phone (a
/// notification service extension on iOS, `onMessageReceived` on Android) with the receipt
/// token its push carried (`AppReceiptTokens`):
///
///     {"receipt": "42.7.mZ3b…", "event": "arrived"}     → 200 {"recorded": true}
///
/// No API key: phones send it, and an app's key does not belong on a phone. The token is the
/// proof: a MAC of the delivery (message and device) under the app's key, so a forged token, or
/// one of another delivery, records nothing (401). A repeat answers `"recorded": false`.
/// Bounded per client address and per app (`AppReceiptLimits`): past either, 429 with
/// `Retry-After`.
struct NativeReceiptAPI: Sendable {
    let store: any GatewayStore
    /// Where the receipt is written (in turns with the services' POSTs, on SQLite).
    let writer: ReceiptWriter
    let keys: ReceiptKeys
    let clock: any Clock
    let metrics: GatewayMetrics
    let logger: Logger
    var limits = AppReceiptLimits()

    /// A receipt is a few dozen bytes; room for what a client library adds around it.
    static let bodyLimit = 2048

    func register(on router: Router) {
        router.add(.POST, "/api/v1/receipts", bodyLimit: Self.bodyLimit) { request in
            do {
                return try await receive(request)
            } catch let error as NativeAPIError {
                return error.response
            } catch let error as HTTPError {
                return NativeAPIError(httpError: error).response
            } catch {
                logger.error("an app's receipt was not recorded", metadata: ["error": "\(error)"])
                var response = NativeAPIError(503, "unavailable", "the receipt could not be recorded; send it again")
                    .response
                response.headers.replaceOrAdd(name: "Retry-After", value: "5")
                return response
            }
        }
    }

    private func receive(_ request: Request) async throws -> Response {
        // Before anything is read: a flood from one address costs no lookup.
        try admit(limits.perAddress, request.remoteAddress ?? "unknown")
        guard let body = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any],
            let receipt = body["receipt"] as? String, !receipt.isEmpty, receipt.utf8.count <= 200
        else {
            throw NativeAPIError(
                400, "invalid_request",
                "the body is {\"receipt\": \"<the push's \(AppReceiptTokens.key)>\", \"event\": \"arrived\" or \"clicked\"}"
            )
        }
        let outcome: ReceiptOutcome
        switch body["event"] as? String {
        case "arrived"?: outcome = .arrived
        case "clicked"?: outcome = .clicked
        default: throw NativeAPIError(400, "invalid_event", "event is \"arrived\" or \"clicked\"")
        }
        // The token names its message; the message names the app whose key must verify it.
        let parts = receipt.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let messageID = Int64(parts[0]), messageID > 0,
            let message = try await store.message(id: messageID),
            let delivery = keys.delivery(token: receipt, appID: message.appID), delivery.messageID == messageID,
            let device = try await store.device(id: delivery.deviceID), device.appID == message.appID
        else {
            metrics.receipts.increment(["app", "refused"])
            throw NativeAPIError(
                401, "invalid_receipt",
                "the receipt token does not verify (not one a push carried, or its message is gone)")
        }
        try admit(limits.perApp, String(message.appID))
        let recording = try await writer.record(
            appID: message.appID,
            [
                DeliveryReceipt(
                    messageID: messageID, token: device.token, channel: device.channel, outcome: outcome, at: clock.now)
            ])
        var amounts: [[String]: UInt64] = [:]
        for recorded in recording.recorded {
            amounts[[recorded.channel.rawValue, recorded.outcome.name], default: 0] += 1
        }
        if recording.repeated > 0 {
            amounts[[device.channel.rawValue, "repeated"], default: 0] += UInt64(recording.repeated)
        }
        if !amounts.isEmpty { metrics.receipts.increment(amounts) }
        return .json(object: ["recorded": !recording.recorded.isEmpty])
    }

    /// Takes a receipt's place in `limiter`'s bucket for `key`, or refuses it: 429 with
    /// `Retry-After`, the seconds until there is room again.
    private func admit(_ limiter: RateLimiter?, _ key: String) throws(NativeAPIError) {
        guard let limiter, let wait = limiter.waitTime(taking: key) else { return }
        metrics.receipts.increment(["app", "rate_limited"])
        var error = NativeAPIError(
            429, "rate_limited", "too many receipts; send this one again after Retry-After seconds")
        error.retryAfter = max(1, Int(wait.rounded(.up)))
        throw error
    }
}

/// The bounds of the keyless `POST /api/v1/receipts` (`receipts.app_rate_per_address`,
/// `receipts.app_rate_per_app`): token buckets refilled at the rate per second and holding ten
/// seconds' worth. Per address, this node's own clients; per app, the gateway's rate shared
/// among the live nodes (`NodeShare`). Behind a reverse proxy every phone shares the proxy's
/// address: set the per-address rate to 0 there (docs/config.md).
struct AppReceiptLimits: Sendable {
    var perAddress: RateLimiter?
    var perApp: RateLimiter?

    init() {}

    init(_ config: GatewayConfig.Receipts, clock: any Clock, share: NodeShare) {
        perAddress = Self.limiter(config.appRatePerAddress, clock: clock, share: nil)
        perApp = Self.limiter(config.appRatePerApp, clock: clock, share: share)
    }

    static func limiter(_ rate: Double, clock: any Clock, share: NodeShare?) -> RateLimiter? {
        rate > 0 ? RateLimiter(rate: rate, burst: max(1, rate * 10), clock: clock, share: share) : nil
    }
}
