import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// Huawei Push Kit: `POST {url}/v1/{appId}/messages:send` with up to 1,000 tokens a request,
/// signed in with the app's OAuth 2.0 client at `/oauth2/v3/token` (docs/reference/android.md,
/// Huawei). A partial success (80100000) invalidates the tokens it names one by one; an
/// expired access token (80200003) is refreshed and the request sent again once.
public struct HuaweiService: JSONBatchService {
    public static let defaultSendURL = "https://push-api.cloud.huawei.com"
    public static let defaultTokenURL = "https://oauth-login.cloud.huawei.com/oauth2/v3/token"

    /// Where messages are sent, without a trailing slash.
    public var baseURL: String
    /// The OAuth 2.0 token endpoint.
    public var tokenURL: String
    /// Receipts asked for (`bi_tag`, and `receipt_id` when the app's credential names its
    /// receipt configuration), when `receipts.public_url` is set.
    public var receipts: ReceiptSettings?

    public init(
        baseURL: String = HuaweiService.defaultSendURL, tokenURL: String = HuaweiService.defaultTokenURL,
        receipts: ReceiptSettings? = nil
    ) {
        self.receipts = receipts
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.tokenURL = tokenURL
    }

    public var maxTokens: Int { HuaweiMessage.maxTokens }

    public func sendURL(_ credential: ChannelCredential) -> String {
        baseURL + "/v1/" + credential.vendorAppID + "/messages:send"
    }

    public func extraHeaders(now: Date) -> [(name: String, value: String)] { [] }

    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    )
        -> HuaweiMessage.Template
    {
        let biTag = receipts?.tag(headers)
        return HuaweiMessage.Template(
            content: content, headers: headers, badgeClass: credential.options["badge_class"], now: now,
            biTag: biTag, receiptID: biTag == nil ? nil : credential.options[HuaweiReceipts.receiptIDOption])
    }

    public func body(_ template: HuaweiMessage.Template, tokens: [String]) -> [UInt8] {
        template.body(tokens: tokens)
    }

    public func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer {
        HuaweiAnswer.read(status: status, body: body, tokens: tokens, retryAfter: retryAfter, now: now)
    }
}

/// The Huawei transport: the shared token-batch sender speaking Huawei.
public typealias HuaweiTransport = TokenBatchTransport<HuaweiService>
