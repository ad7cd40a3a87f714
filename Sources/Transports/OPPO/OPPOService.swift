import Foundation
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// OPPO Push: an `auth_token` from `POST {url}/server/v1/auth` (signed with SHA-256 of AppKey,
/// timestamp and MasterSecret; it lives a day), then
/// `POST /server/v1/message/notification/unicast_batch` with up to 1,000 messages, each its
/// own registration id; docs/reference/android.md §9. A message OPPO answers with an invalid
/// registration id is invalidated; code 33 is the app's daily limit.
///
/// The credential: `vendorAppID` OPPO's AppID, `clientID` its AppKey, the secret its
/// MasterSecret.
public struct OPPOService: TokenBatchService {
    public static let defaultSendURL = "https://api.push.oppomobile.com"

    public var baseURL: String
    /// Receipts asked for (`call_back_url`), when `receipts.public_url` is set.
    public var receipts: ReceiptSettings?

    public init(baseURL: String = OPPOService.defaultSendURL, receipts: ReceiptSettings? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.receipts = receipts
    }

    /// A push's `notification` object, and the receipts it asks for.
    public struct Template: Sendable {
        var notification: JSONValue
        var receipts: ReceiptRequest?
    }

    public var maxTokens: Int { 1000 }

    public func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async
        -> Result<AccessToken, AccessTokenFailure>
    {
        let timestamp = String(Int64((now.timeIntervalSince1970 * 1000).rounded(.down)))
        let sign = Hex.encode(Digest.sha256(Array((credential.clientID + timestamp).utf8) + credential.secret))
        let result = await client.execute(
            HTTPClientRequest(
                method: "POST", url: baseURL + "/server/v1/auth",
                headers: [(name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8")],
                body: FormEncoding.encode([("app_key", credential.clientID), ("timestamp", timestamp), ("sign", sign)]),
                timeout: timeout))
        let response: HTTPClientResponse
        switch result {
        case .failure(let error): return .failure(.unavailable(.transport(error.code), retryAfter: nil))
        case .success(let answered): response = answered
        }
        let json = try? JSONValue(parsing: response.body)
        let code = json?["code"]?.intValue ?? -1
        if code == 0, let token = json?["data"]?["auth_token"]?.stringValue, !token.isEmpty {
            // OPPO's auth_token lives 24 hours.
            return .success(AccessToken(value: token, expires: now.addingTimeInterval(86_400)))
        }
        let reason = SendReason.service(json?["code"]?.intValue.map(String.init) ?? "HTTP\(response.status)")
        if response.status >= 500 || code < 0 || code == 55 || code == 13 {
            return .failure(.unavailable(reason, retryAfter: nil))
        }
        return .failure(.refused(reason))
    }

    /// The `notification` object of every message of a push.
    /// OPPO carries notifications only: a push without an alert is skipped
    /// (`unsupported_content`), never sent blank.
    public var carriesDataMessages: Bool { false }

    /// OPPO refuses `action_parameters` (the custom data as one JSON text) over 4 KB
    /// (docs/reference/android.md §9).
    public func exceedsServiceLimit(_ template: Template) -> Bool {
        (template.notification["action_parameters"]?.stringValue?.utf8.count ?? 0)
            > OPPOMessage.maxActionParametersBytes
    }

    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    )
        -> Template
    {
        let request = receipts?.request(channel: OPPOService.channel, headers)
        return Template(
            notification: OPPOMessage.notification(content: content, headers: headers, now: now),
            // OPPO takes a callback URL of at most 200 characters; a longer one asks for nothing.
            receipts: request.flatMap { $0.url.count <= OPPOReceipts.maxURLLength ? $0 : nil })
    }

    /// The form's `messages` (a JSON list of one message per token); its `auth_token` is the
    /// sign-in's and not shown.
    public func readableBody(_ template: Template, token: String) -> ServiceBody {
        let messages = JSONValue.array([
            ["target_type": 2, "target_value": .string(token), "notification": template.notification]
        ])
        return ServiceBody(
            encoding: .form, body: ["messages": messages],
            bytes: FormEncoding.encode([("messages", messages.serializedString)]).count)
    }

    /// Every message of a batch is its own registration id's, so each asks for receipts with a
    /// `call_back_parameter` MAC'd with that id.
    public func send(
        _ template: Template, tokens: [String], credential: ChannelCredential, token: AccessToken, client: HTTPClient,
        timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        let messages = JSONValue.array(
            tokens.map { target in
                var notification = template.notification
                if let receipts = template.receipts, case .object(var fields) = notification {
                    fields["call_back_url"] = .string(receipts.url)
                    fields["call_back_parameter"] = .string(receipts.param(token: target))
                    notification = .object(fields)
                }
                return ["target_type": 2, "target_value": .string(target), "notification": notification]
            })
        let request = HTTPClientRequest(
            method: "POST", url: baseURL + "/server/v1/message/notification/unicast_batch",
            headers: [
                (name: "content-type", value: "application/x-www-form-urlencoded;charset=UTF-8"),
                (name: "auth_token", value: token.value),
            ],
            body: FormEncoding.encode([("auth_token", token.value), ("messages", messages.serializedString)]),
            timeout: timeout, maxResponseBytes: HTTPClientRequest.maxBatchResponseBytes(tokens: tokens.count))
        client.execute(
            request, tokens: tokens, read: { OPPOAnswer.read(status: $0.status, body: $0.body, tokens: tokens) },
            done: done)
    }
}

/// The OPPO transport: the shared token-batch sender speaking OPPO.
public typealias OPPOTransport = TokenBatchTransport<OPPOService>

enum OPPOMessage {
    /// OPPO keeps an offline message at most three days.
    static let maxOfflineTTL: Int64 = 259_200
    /// `action_parameters`: at most 4 KB.
    static let maxActionParametersBytes = 4096

    static func notification(content: PushContent, headers: PushHeaders, now: Date) -> JSONValue {
        var notification: [String: JSONValue] = [
            // OPPO requires both: a title of at most 50 characters, content of at most 200.
            "title": .string(String((content.title ?? content.titleLocKey ?? "").prefix(50))),
            "content": .string(String((content.body ?? content.bodyLocKey ?? content.title ?? "").prefix(200))),
        ]
        if let subtitle = content.subtitle { notification["sub_title"] = .string(String(subtitle.prefix(10))) }
        if let intent = content.intent(headers) {
            // 5: open an intent scheme URL.
            notification["click_action_type"] = 5
            notification["click_action_url"] = .string(intent)
        } else if let url = content.url(headers), url.count <= 500 {
            // 2: open a web page (OPPO takes at most 500 characters).
            notification["click_action_type"] = 2
            notification["click_action_url"] = .string(url)
        } else {
            notification["click_action_type"] = 0
        }
        if let data = content.dataText { notification["action_parameters"] = .string(data) }
        if let channelID = headers.android?.channelIDs["oppo"] { notification["channel_id"] = .string(channelID) }
        if let seconds = headers.secondsToLive(now: now, atLeast: 1, atMost: maxOfflineTTL) {
            notification["off_line_ttl"] = .int(seconds)
        }
        return .object(notification)
    }
}

/// OPPO's answer: `{"code","message","data"}`; a batch's `data` is one entry per message,
/// `{"messageId","registrationId"}` or `{"registrationId","errorCode","errorMessage"}`.
enum OPPOAnswer {
    static func read(status: Int, body: [UInt8], tokens: [String]) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["code"]?.intValue.map(String.init) ?? "HTTP\(status)"
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        switch code {
        case "0":
            var byToken: [String: SendOutcome] = [:]
            for entry in json?["data"]?.arrayValue ?? [] {
                guard let regID = entry["registrationId"]?.stringValue else { continue }
                if let error = entry["errorCode"]?.intValue {
                    let reason = SendReason.service(String(error))
                    // 10000: an invalid or unregistered registration id.
                    byToken[regID] = error == 10000 ? .invalidate(reason, since: nil) : .failed(reason)
                } else {
                    byToken[regID] = .delivered(serviceMessageID: entry["messageId"]?.stringValue)
                }
            }
            return .outcomes(tokens.map { byToken[$0] ?? .delivered(serviceMessageID: nil) })
        case "11", "29":
            return .refreshAuth(reason)
        case "33":
            return .dailyQuota(reason)
        case "14", "16", "28", "30":
            return .credentialRefused(reason)
        case "-1", "-2", "13", "55":
            return all(.retry(reason, after: nil))
        default:
            if status >= 500 || status == 429 { return all(.retry(reason, after: nil)) }
            return all(.failed(reason))
        }
    }
}
