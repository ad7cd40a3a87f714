import Foundation
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// vivo Push: an `authToken` from `POST {url}/message/auth` (signed with the MD5 of AppID,
/// AppKey, timestamp and AppSecret; it lives a day), then `POST /message/send` for one regId,
/// or `POST /message/saveListPayload` and `POST /message/pushToList` for 2–1,000;
/// docs/reference/android.md §10. regIds vivo calls invalid (10302, `invalidUsers`) are
/// invalidated; 10070 and 10073 are the app's daily limits.
///
/// The credential: `vendorAppID` vivo's AppID (a number), `clientID` its AppKey, the secret
/// its AppSecret.
public struct VivoService: TokenBatchService {
    public static let defaultSendURL = "https://api-push.vivo.com.cn"

    public var baseURL: String
    /// Receipts asked for (`extra.callback`), when `receipts.public_url` is set and the
    /// credential names the receipt id made in vivo's console.
    public var receipts: ReceiptSettings?

    public init(baseURL: String = VivoService.defaultSendURL, receipts: ReceiptSettings? = nil) {
        self.baseURL = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        self.receipts = receipts
    }

    /// A push's message fields but its regIds and request id, and the receipts it asks for.
    public struct Template: Sendable {
        var fields: [String: JSONValue]
        var receipts: ReceiptRequest?
        /// The receipt id vivo's console made for the app's receipt address (`extra.callback`).
        var receiptID: String?

        /// The fields with `extra` asking for receipts by `param`.
        func fields(param: String?) -> [String: JSONValue] {
            guard let receiptID, let param else { return fields }
            var fields = fields
            fields["extra"] = ["callback": .string(receiptID), "callback.param": .string(param)]
            return fields
        }
    }

    public var maxTokens: Int { 1000 }

    public func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async
        -> Result<AccessToken, AccessTokenFailure>
    {
        let timestamp = Int64((now.timeIntervalSince1970 * 1000).rounded(.down))
        let sign = Hex.encode(
            Digest.md5(
                Array((credential.vendorAppID + credential.clientID + String(timestamp)).utf8) + credential.secret))
        let body: JSONValue = [
            "appId": Int64(credential.vendorAppID).map(JSONValue.int) ?? .string(credential.vendorAppID),
            "appKey": .string(credential.clientID), "timestamp": .int(timestamp), "sign": .string(sign),
        ]
        let result = await client.execute(
            HTTPClientRequest(
                method: "POST", url: baseURL + "/message/auth",
                headers: [(name: "content-type", value: "application/json")], body: body.serialized(), timeout: timeout)
        )
        let response: HTTPClientResponse
        switch result {
        case .failure(let error): return .failure(.unavailable(.transport(error.code), retryAfter: nil))
        case .success(let answered): response = answered
        }
        let json = try? JSONValue(parsing: response.body)
        if json?["result"]?.intValue == 0, let token = json?["authToken"]?.stringValue, !token.isEmpty {
            // vivo's authToken lives a day.
            return .success(AccessToken(value: token, expires: now.addingTimeInterval(86_400)))
        }
        let reason = SendReason.service(json?["result"]?.intValue.map(String.init) ?? "HTTP\(response.status)")
        if response.status >= 500 || json == nil { return .failure(.unavailable(reason, retryAfter: nil)) }
        return .failure(.refused(reason))
    }

    /// The message fields of a push but its regIds and request id.
    /// vivo carries notifications only: a push without an alert is skipped
    /// (`unsupported_content`), never sent blank.
    public var carriesDataMessages: Bool { false }

    public func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    )
        -> Template
    {
        var fields = VivoMessage.fields(content: content, headers: headers, now: now)
        fields["appId"] = Int64(credential.vendorAppID).map(JSONValue.int) ?? .string(credential.vendorAppID)
        let receiptID = credential.options[VivoReceipts.receiptIDOption]
        return Template(
            fields: fields, receipts: receiptID == nil ? nil : receipts?.request(channel: VivoService.channel, headers),
            receiptID: receiptID)
    }

    /// One device's `/message/send` body (its `requestId` is made per request and not shown).
    public func readableBody(_ template: Template, token: String) -> ServiceBody {
        var single = template.fields
        single["regId"] = .string(token)
        return .json(JSONValue.object(single).serialized())
    }

    /// A single push asks for receipts with a `callback.param` MAC'd with its regId; a batch's
    /// saved message with one naming its send, recorded first.
    public func send(
        _ template: Template, tokens: [String], credential: ChannelCredential, token: AccessToken,
        client: HTTPClient, timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        guard let receipts = template.receipts else {
            return send(template.fields, tokens: tokens, token: token, client: client, timeout: timeout, done: done)
        }
        if tokens.count == 1 {
            return send(
                template.fields(param: receipts.param(token: tokens[0])), tokens: tokens, token: token, client: client,
                timeout: timeout, done: done)
        }
        Task {
            // A batch whose send could not be recorded goes without receipts rather than late.
            let param = await receipts.param(tokens: tokens)
            send(
                template.fields(param: param), tokens: tokens, token: token, client: client, timeout: timeout,
                done: done)
        }
    }

    func send(
        _ template: [String: JSONValue], tokens: [String], token: AccessToken, client: HTTPClient, timeout: Duration,
        done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        @Sendable func post(
            _ path: String, _ body: [String: JSONValue], _ answered: @escaping @Sendable (HTTPClientResponse) -> Void
        ) {
            var body = body
            body["requestId"] = .string(UUID().uuidString)
            let request = HTTPClientRequest(
                method: "POST", url: baseURL + path,
                headers: [(name: "content-type", value: "application/json"), (name: "authToken", value: token.value)],
                body: JSONValue.object(body).serialized(), timeout: timeout,
                maxResponseBytes: HTTPClientRequest.maxBatchResponseBytes(tokens: tokens.count))
            client.execute(request) { result in
                switch result {
                case .failure(let error):
                    done(.outcomes(Array(repeating: .retry(.transport(error.code), after: nil), count: tokens.count)))
                case .success(let response):
                    answered(response)
                }
            }
        }
        if tokens.count == 1 {
            var single = template
            single["regId"] = .string(tokens[0])
            post("/message/send", single) { response in
                done(VivoAnswer.read(status: response.status, body: response.body, tokens: tokens))
            }
            return
        }
        // A batch is two calls: the message saved once, then sent to the regIds by its taskId.
        post("/message/saveListPayload", template) { saved in
            let json = try? JSONValue(parsing: saved.body)
            guard json?["result"]?.intValue == 0, let taskID = json?["taskId"]?.stringValue else {
                return done(VivoAnswer.read(status: saved.status, body: saved.body, tokens: tokens))
            }
            var list: [String: JSONValue] = ["regIds": .array(tokens.map(JSONValue.string)), "taskId": .string(taskID)]
            list["appId"] = template["appId"]
            post("/message/pushToList", list) { response in
                done(VivoAnswer.read(status: response.status, body: response.body, tokens: tokens))
            }
        }
    }
}

/// The vivo transport: the shared token-batch sender speaking vivo.
public typealias VivoTransport = TokenBatchTransport<VivoService>

enum VivoMessage {
    static func fields(content: PushContent, headers: PushHeaders, now: Date) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [
            // vivo counts a non-ASCII character as two: titles take 40, contents 100.
            "title": .string(truncated(content.title ?? content.titleLocKey ?? "", units: 40)),
            "content": .string(truncated(content.body ?? content.bodyLocKey ?? content.title ?? "", units: 100)),
            // 4: sound and vibration; 3: vibration only.
            "notifyType": .int(content.sound == nil && headers.android?.sound == nil ? 3 : 4),
            "classification": .int(VivoOptions.classification(headers)),
        ]
        if let category = headers.android?.category["vivo"] { fields["category"] = .string(category) }
        if let intent = content.intent(headers) {
            // 4: open an app page by its intent URI.
            fields["skipType"] = 4
            fields["skipContent"] = .string(intent)
        } else if let url = content.url(headers), url.count <= 1000 {
            // 2: open a web page (vivo takes at most 1,000 characters).
            fields["skipType"] = 2
            fields["skipContent"] = .string(url)
        } else {
            fields["skipType"] = 1
        }
        if !content.data.isEmpty { fields["clientCustomMap"] = content.dataObject }
        // vivo keeps a message 15 minutes to 7 days.
        if let seconds = headers.secondsToLive(now: now, atLeast: 900, atMost: 604_800) {
            fields["timeToLive"] = .int(seconds)
        }
        return fields
    }

    /// `text` cut to `units`, a non-ASCII character counting two.
    static func truncated(_ text: String, units: Int) -> String {
        var used = 0
        var result = ""
        for character in text {
            let cost = character.isASCII ? 1 : 2
            guard used + cost <= units else { break }
            used += cost
            result.append(character)
        }
        return result
    }
}

/// vivo's answer: `{"result","desc","taskId"?,"invalidUsers"?:[{"status","userid"}]}`.
enum VivoAnswer {
    static func read(status: Int, body: [UInt8], tokens: [String]) -> TokenBatchAnswer {
        let json = try? JSONValue(parsing: body)
        let code = json?["result"]?.intValue.map(String.init) ?? "HTTP\(status)"
        let reason = SendReason.service(code)
        func all(_ outcome: SendOutcome) -> TokenBatchAnswer {
            .outcomes(Array(repeating: outcome, count: tokens.count))
        }
        switch code {
        case "0":
            let taskID = json?["taskId"]?.stringValue
            let invalid = Set(json?["invalidUsers"]?.arrayValue?.compactMap { $0["userid"]?.stringValue } ?? [])
            return .outcomes(
                tokens.map {
                    invalid.contains($0)
                        ? .invalidate(.service("10302"), since: nil) : .delivered(serviceMessageID: taskID)
                })
        case "10302", "10054":
            return all(.invalidate(reason, since: nil))
        case "10000":
            return .refreshAuth(reason)
        case "10070", "10073":
            return .dailyQuota(reason)
        case "10094":
            return .credentialRefused(reason)
        case "10040", "10071", "10072":
            return all(.retry(reason, after: nil))
        default:
            if status >= 500 || status == 429 { return all(.retry(reason, after: nil)) }
            return all(.failed(reason))
        }
    }
}
