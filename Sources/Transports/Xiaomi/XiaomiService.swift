import Foundation
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// Xiaomi MiPush: `POST {url}/v3/message/regid`, form-encoded, up to 1,000 registration ids a
/// request, every request signed with `Authorization: key=<AppSecret>` (no token exchange);
/// docs/reference/android.md §8. Ids Xiaomi names in `data.bad_regids` (or all of them, 20301)
/// are invalidated; 200001 is the app's daily limit: the pushes it stops are kept (queued,
/// reason `quota`) and sent again after midnight China time.
///
/// The credential: `vendorAppID` the app's package name (`restricted_package_name`),
/// `clientID` Xiaomi's AppID, the secret its AppSecret.
public struct XiaomiService: TokenBatchService {
    public static let defaultSendURL = "https://api.xmpush.xiaomi.com"

    public var baseURL: String
    /// Receipts asked for (`extra.callback`), when `receipts.public_url` is set.
    public var receipts: ReceiptSettings?

    public init(baseURL: String = XiaomiService.defaultSendURL, receipts: ReceiptSettings? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.receipts = receipts
    }

    /// A push's form fields but its ids, and the receipts it asks for.
    public struct Template: Sendable {
        var fields: [(String, String)]
        var receipts: ReceiptRequest?
    }

    public var maxTokens: Int { 1000 }

    /// Xiaomi's daily limit keeps the pushes, with the reason, until its day turns.
    public var dailyQuotaPolicy: DailyQuotaPolicy { .holdUntilTomorrow }

    /// The AppSecret is the key of every request: nothing to fetch.
    public func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async
        -> Result<AccessToken, AccessTokenFailure>
    {
        .success(AccessToken(value: String(decoding: credential.secret, as: UTF8.self), expires: .distantFuture))
    }

    /// The AppSecret is checked by a request: a push that names no registration id. Xiaomi
    /// checks the key first (`21301` for one it does not know); past it, the missing ids are
    /// refused (`21305`) and nothing is sent.
    public func confirm(_ credential: ChannelCredential, token: AccessToken, client: HTTPClient, timeout: Duration)
        async -> AccessTokenFailure?
    {
        let request = HTTPClientRequest(
            method: "POST", url: baseURL + "/v3/message/regid",
            headers: [
                (name: "authorization", value: "key=" + token.value),
                (name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8"),
            ], body: FormEncoding.encode([("restricted_package_name", credential.vendorAppID)]), timeout: timeout,
            maxResponseBytes: 64 << 10)
        return CredentialConfirmation.read(await client.execute(request), refusedCodes: ["21301"]) { json in
            json?["code"]?.intValue.map(String.init)
        }
    }

    /// The form fields of a push but its ids, in order.
    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    )
        -> Template
    {
        Template(
            fields: XiaomiMessage.fields(
                content: content, headers: headers, packageName: credential.vendorAppID, now: now),
            receipts: receipts?.request(channel: XiaomiService.channel, headers))
    }

    /// The form fields of the request (`registration_id` first, as `send` writes them).
    public func readableBody(_ template: Template, token: String) -> ServiceBody {
        let fields = [("registration_id", token)] + template.fields
        return ServiceBody(
            encoding: .form, body: .object(Dictionary(fields.map { ($0, JSONValue.string($1)) }) { first, _ in first }),
            bytes: FormEncoding.encode(fields).count)
    }

    /// A request asking for receipts names them by one `extra.callback.param`: a one-token
    /// request's is MAC'd with its token; a batch's names its send, recorded first.
    public func send(
        _ template: Template, tokens: [String], credential: ChannelCredential, token: AccessToken,
        client: HTTPClient, timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        @Sendable func post(_ fields: [(String, String)]) {
            let request = HTTPClientRequest(
                method: "POST", url: baseURL + "/v3/message/regid",
                headers: [
                    (name: "authorization", value: "key=" + token.value),
                    (name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8"),
                ], body: FormEncoding.encode([("registration_id", tokens.joined(separator: ","))] + fields),
                timeout: timeout, maxResponseBytes: HTTPClientRequest.maxBatchResponseBytes(tokens: tokens.count))
            client.execute(
                request, tokens: tokens, read: { XiaomiAnswer.read(status: $0.status, body: $0.body, tokens: tokens) },
                done: done)
        }
        guard let receipts = template.receipts else { return post(template.fields) }
        if tokens.count == 1 {
            return post(
                template.fields + XiaomiReceipts.fields(url: receipts.url, param: receipts.param(token: tokens[0])))
        }
        let fields = template.fields
        Task {
            // A batch whose send could not be recorded goes without receipts rather than late.
            guard let param = await receipts.param(tokens: tokens) else { return post(fields) }
            post(fields + XiaomiReceipts.fields(url: receipts.url, param: param))
        }
    }
}

/// The Xiaomi transport: the shared token-batch sender speaking Xiaomi.
public typealias XiaomiTransport = TokenBatchTransport<XiaomiService>

enum XiaomiMessage {
    /// Xiaomi keeps a message at most two weeks (`time_to_live`, in milliseconds).
    static let maxTimeToLive: Int64 = 1_209_600_000

    static func fields(content: PushContent, headers: PushHeaders, packageName: String, now: Date) -> [(
        String, String
    )] {
        var fields: [(String, String)] = [("restricted_package_name", packageName)]
        if let data = content.dataText { fields.append(("payload", data)) }
        if content.isDataOnly {
            fields.append(("pass_through", "1"))
        } else {
            fields.append(("pass_through", "0"))
            fields.append(("title", content.title ?? content.titleLocKey ?? ""))
            fields.append(("description", content.body ?? content.bodyLocKey ?? ""))
            // -1: the phone's default sound, vibration and lights.
            fields.append(("notify_type", "-1"))
            if let intent = content.intent(headers) {
                fields.append(("extra.notify_effect", "2"))
                fields.append(("extra.intent_uri", intent))
            } else if let url = content.url(headers) {
                // 3: open a web page.
                fields.append(("extra.notify_effect", "3"))
                fields.append(("extra.web_uri", url))
            } else {
                fields.append(("extra.notify_effect", "1"))
            }
            if let channelID = headers.android?.channelIDs["xiaomi"] { fields.append(("extra.channel_id", channelID)) }
        }
        if let expiration = headers.expiration {
            let milliseconds = Int64((expiration.timeIntervalSince(now) * 1000).rounded(.down))
            fields.append(("time_to_live", String(min(max(1, milliseconds), maxTimeToLive))))
        }
        return fields
    }
}

/// Xiaomi's answer: HTTP 200 with `{"result","code","description","data":{"id","bad_regids"}}`.
enum XiaomiAnswer {
    static func read(status: Int, body: [UInt8], tokens: [String]) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["code"]?.intValue.map(String.init) ?? "HTTP\(status)"
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        switch code {
        case "0":
            let id = json?["data"]?["id"]?.stringValue
            let bad = Set(
                (json?["data"]?["bad_regids"]?.stringValue ?? "").split(separator: ",").map {
                    $0.trimmingCharacters(in: .whitespaces)
                })
            return .outcomes(
                tokens.map {
                    bad.contains($0) ? .invalidate(.service("bad_regid"), since: nil) : .delivered(serviceMessageID: id)
                })
        case "20301":
            return all(.invalidate(reason, since: nil))
        case "200001":
            return .dailyQuota(reason)
        case "21301":
            return .credentialRefused(reason)
        case "10001", "10002", "10003", "10027", "10037":
            return all(.retry(reason, after: nil))
        default:
            if status >= 500 || status == 429 { return all(.retry(reason, after: nil)) }
            return all(.failed(reason))
        }
    }
}
