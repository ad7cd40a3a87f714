import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// Honor Push: `POST {url}/api/v1/{appId}/sendMessage` with up to 1,000 tokens a request,
/// signed in with the app's OAuth 2.0 client at `/auth/token` (docs/reference/android.md, Honor).
public struct HonorService: JSONBatchService {
    public static let defaultSendURL = "https://push-api.cloud.honor.com"
    public static let defaultTokenURL = "https://iam.developer.honor.com/auth/token"

    /// Where messages are sent, without a trailing slash.
    public var baseURL: String
    /// The OAuth 2.0 token endpoint.
    public var tokenURL: String
    /// Receipts asked for (`android.biTag`), when receipts are on and the app's Honor
    /// credential turns them on (`HonorReceipts.receiptsOption`).
    public var receipts: ReceiptSettings?

    public init(
        baseURL: String = HonorService.defaultSendURL, tokenURL: String = HonorService.defaultTokenURL,
        receipts: ReceiptSettings? = nil
    ) {
        self.receipts = receipts
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.tokenURL = tokenURL
    }

    public var maxTokens: Int { HonorMessage.maxTokens }

    public func sendURL(_ credential: ChannelCredential) -> String {
        baseURL + "/api/v1/" + credential.vendorAppID + "/sendMessage"
    }

    /// Honor's documented request carries the time it was made, in epoch milliseconds.
    public func extraHeaders(now: Date) -> [(name: String, value: String)] {
        [(name: "timestamp", value: String(Int64((now.timeIntervalSince1970 * 1000).rounded(.down))))]
    }

    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    )
        -> HonorMessage.Template
    {
        HonorMessage.Template(
            content: content, headers: headers, badgeClass: credential.options["badge_class"], now: now,
            biTag: HonorReceipts.isOn(credential) ? receipts?.tag(headers) : nil)
    }

    public func body(_ template: HonorMessage.Template, tokens: [String]) -> [UInt8] {
        template.body(tokens: tokens)
    }

    public func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer {
        HonorAnswer.read(status: status, body: body, tokens: tokens, retryAfter: retryAfter, now: now)
    }
}

/// The Honor transport: the shared token-batch sender speaking Honor.
public typealias HonorTransport = TokenBatchTransport<HonorService>
