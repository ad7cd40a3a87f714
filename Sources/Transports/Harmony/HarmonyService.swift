import Foundation
import Logging
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// HarmonyOS NEXT through Huawei Push Kit's scenario API v3: `POST {url}/v3/{projectId}/
/// messages:send` with up to 1,000 tokens a request and a `push-type` header, authorised by a
/// JWT the credential's service account signs itself (PS256, used for its hour: no token
/// endpoint). A refused JWT is signed again once; a second refusal holds the credential
/// (docs/reference/harmony.md).
public struct HarmonyService: TokenBatchService {
    public static let defaultSendURL = "https://push-api.cloud.huawei.com"

    /// Where messages are sent, without a trailing slash.
    public var baseURL: String

    /// Receipts asked for (`pushOptions.biTag`), when receipts are on.
    public var receipts: ReceiptSettings?

    public init(baseURL: String = HarmonyService.defaultSendURL, receipts: ReceiptSettings? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.receipts = receipts
    }

    public var maxTokens: Int { HarmonyMessage.maxTokens }
    /// Huawei: a test message (the message's `test_message`, or any push to sandbox devices)
    /// carries at most 10 tokens (docs/reference/harmony.md §3).
    public func maxTokens(headers: PushHeaders, environment: PushEnvironment) -> Int {
        HarmonyMessage.isTestMessage(headers: headers, environment: environment)
            ? HarmonyMessage.maxTestMessageTokens : HarmonyMessage.maxTokens
    }
    /// The badge refresh message sets the icon's count without a notification.
    public var carriesBadgeOnly: Bool { true }
    /// Push Kit v3 refuses a body over 4,096 bytes, its tokens not counted (80300008;
    /// docs/reference/harmony.md §1), as Huawei's Android Push Kit does.
    public func exceedsServiceLimit(_ template: HarmonyMessage.Template) -> Bool {
        template.body(tokens: []).count - 1 > pushKitBodyLimit
    }

    public func sendURL(_ credential: ChannelCredential) -> String {
        baseURL + "/v3/" + credential.vendorAppID + "/messages:send"
    }

    /// Signs a JWT with the credential's key file (its secret): no request, so nothing to
    /// retry; a key file that does not load is refused (held, credential failing).
    public func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async
        -> Result<AccessToken, AccessTokenFailure>
    {
        do {
            let account = try HarmonyServiceAccount(json: credential.secret)
            let jwt = try account.jwt(issuedAt: now)
            return .success(
                AccessToken(
                    value: jwt, expires: now.addingTimeInterval(TimeInterval(HarmonyServiceAccount.lifetimeSeconds))))
        } catch {
            return .failure(.refused(.service("invalid_service_account")))
        }
    }

    /// The JWT is signed here, so only a request shows whether Huawei knows the key: a test
    /// message to no token. Push Kit checks the JWT first (401 `80200001` for a key it does not
    /// know); past it, the empty token list is refused (`80300010`) and nothing is sent.
    public func confirm(_ credential: ChannelCredential, token: AccessToken, client: HTTPClient, timeout: Duration)
        async -> AccessTokenFailure?
    {
        let request = HTTPClientRequest(
            method: "POST", url: sendURL(credential),
            headers: [
                (name: "authorization", value: "Bearer " + token.value),
                (name: "content-type", value: "application/json"), (name: "push-type", value: "0"),
            ],
            body: Array(#"{"payload":{},"target":{"token":[]},"pushOptions":{"testMessage":true}}"#.utf8),
            timeout: timeout, maxResponseBytes: 64 << 10)
        return CredentialConfirmation.read(await client.execute(request)) { json in json?["code"]?.stringValue }
    }

    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    ) -> HarmonyMessage.Template {
        let biTag = receipts?.tag(headers)
        return HarmonyMessage.Template(
            content: content, headers: headers, environment: environment,
            defaultCategory: credential.options["category"], now: now, biTag: biTag,
            receiptID: biTag == nil ? nil : credential.options[HarmonyReceipts.receiptIDOption])
    }

    public func readableBody(_ template: HarmonyMessage.Template, token: String) -> ServiceBody {
        .json(template.body(tokens: [token]))
    }

    public func send(
        _ template: HarmonyMessage.Template, tokens: [String], credential: ChannelCredential, token: AccessToken,
        client: HTTPClient, timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        let request = HTTPClientRequest(
            method: "POST", url: sendURL(credential),
            headers: [
                (name: "authorization", value: "Bearer " + token.value),
                (name: "content-type", value: "application/json"),
                (name: "push-type", value: String(template.pushType)),
            ], body: template.body(tokens: tokens), timeout: timeout,
            maxResponseBytes: HTTPClientRequest.maxBatchResponseBytes(tokens: tokens.count))
        client.execute(
            request, tokens: tokens,
            read: {
                HarmonyAnswer.read(
                    status: $0.status, body: $0.body, tokens: tokens, retryAfter: $0.header("retry-after"), now: now)
            },
            done: done)
    }
}

/// The HarmonyOS transport: the shared token-batch sender speaking Push Kit v3.
public typealias HarmonyTransport = TokenBatchTransport<HarmonyService>
