import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

/// What a service that takes many device tokens in one request tells `TokenBatchTransport`:
/// how to sign in, how to render, how to send a chunk of
/// tokens and what the answer means. Everything vendor-specific lives in the conformer; the
/// transport does credentials, token caching, chunking and the outcomes.
public protocol TokenBatchService: Sendable {
    /// A push's message rendered once, to be given each chunk of tokens.
    associatedtype Template: Sendable

    /// The service's limit of tokens per request.
    var maxTokens: Int { get }
    /// The limit for a push with these headers to devices of this environment (a service may
    /// take fewer for a test message); at most `maxTokens`.
    func maxTokens(headers: PushHeaders, environment: PushEnvironment) -> Int
    /// What a used-up daily quota does to the pushes it stops: skipped, or kept and sent again
    /// once the service's day turns.
    var dailyQuotaPolicy: DailyQuotaPolicy { get }
    /// Whether the service has a pass-through (data) message for content without an alert
    /// (a background or data-only push). A service without one gets no such push:
    /// it is skipped as `unsupported_content`, as is content with neither an alert nor data
    /// (badge-only) on every token-batch service.
    var carriesDataMessages: Bool { get }
    /// Whether the service sets an app icon's badge without a notification (a badge refresh
    /// message): badge-only content is sent instead of skipped.
    var carriesBadgeOnly: Bool { get }
    /// Whether the service would refuse the rendered message for its size (4,096 bytes without
    /// the tokens, 4 KB of action parameters, …): its
    /// pushes are skipped as `payload_too_large`, never sent as a request the service refuses.
    func exceedsServiceLimit(_ template: Template) -> Bool
    /// Trades the credential for an access token (an OAuth 2.0 client-credentials grant for
    /// `JSONBatchService`s; a signed request; none for a key sent with every request).
    func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async -> Result<
        AccessToken, AccessTokenFailure
    >
    /// The message for devices of `environment` (a service with a test message of its own
    /// marks a sandbox one; the others send both alike).
    func template(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, credential: ChannelCredential,
        now: Date
    ) -> Template
    /// The body one device's request carries, for people to read (the console shows it):
    /// what `send` would post for `[token]`, less what only the sending adds (an access token, a
    /// request id).
    func readableBody(_ template: Template, token: String) -> ServiceBody
    /// Sends one chunk of tokens (at most `maxTokens`) and calls `done` once with what the
    /// service answered, on any thread.
    func send(
        _ template: Template, tokens: [String], credential: ChannelCredential, token: AccessToken, client: HTTPClient,
        timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void)
    /// Asks the service once whether it knows a credential just added, when its sign-in made no
    /// request (a self-signed JWT; a secret that is the key of every request): one
    /// authenticated request that names no device, so nothing is sent. nil: the service took
    /// the credential (or its sign-in already was the check).
    func confirm(_ credential: ChannelCredential, token: AccessToken, client: HTTPClient, timeout: Duration) async
        -> AccessTokenFailure?
}

extension TokenBatchService {
    /// The sign-in asked the service (an OAuth grant, a signed request).
    public func confirm(_ credential: ChannelCredential, token: AccessToken, client: HTTPClient, timeout: Duration)
        async -> AccessTokenFailure?
    { nil }
    /// Most services take as many tokens whatever the push.
    public func maxTokens(headers: PushHeaders, environment: PushEnvironment) -> Int { maxTokens }
    /// Most services have a data message (pass-through).
    public var carriesDataMessages: Bool { true }
    /// None of the Android services sets a badge without a notification.
    public var carriesBadgeOnly: Bool { false }
    /// No size limit of its own besides those the rendering keeps to (titles and texts cut to
    /// the service's lengths).
    public func exceedsServiceLimit(_ template: Template) -> Bool { false }
}

/// A token-batch service that takes one JSON request per chunk with a bearer token from an
/// OAuth 2.0 client-credentials grant.
public protocol JSONBatchService: TokenBatchService {
    var tokenURL: String { get }
    func sendURL(_ credential: ChannelCredential) -> String
    /// Headers besides authorization and content type (a `timestamp`, …).
    func extraHeaders(now: Date) -> [(name: String, value: String)]
    func body(_ template: Template, tokens: [String]) -> [UInt8]
    func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer
}

/// The JSON-batch services refuse a body over 4,096 bytes, its tokens not counted
/// (docs/reference/android.md §3–4).
public let pushKitBodyLimit = 4096

extension JSONBatchService {
    /// The body with no token, less the one byte of an empty token list the tokens replace (a
    /// list of tokens is `1 + Σ(length + 3)` bytes), over `pushKitBodyLimit`.
    public func exceedsServiceLimit(_ template: Template) -> Bool {
        body(template, tokens: []).count - 1 > pushKitBodyLimit
    }
}

extension HTTPClientRequest {
    /// The most body bytes read of a many-token request's answer: the services list refused
    /// tokens in it (`illegal_tokens`, `invalidUsers`, bad ids), so the
    /// bound grows with the batch — still a few hundred KB for 1,000 tokens, however long the
    /// upstream keeps streaming.
    public static func maxBatchResponseBytes(tokens: Int) -> Int {
        defaultMaxResponseBytes + 512 * tokens
    }
}

extension JSONBatchService {
    /// OAuth 2.0 client credentials (RFC 6749 §4.4) at the service's token endpoint.
    public func signIn(_ credential: ChannelCredential, client: HTTPClient, timeout: Duration, now: Date) async
        -> Result<AccessToken, AccessTokenFailure>
    {
        let form = FormEncoding.encode([
            ("grant_type", "client_credentials"), ("client_id", credential.clientID),
            ("client_secret", String(decoding: credential.secret, as: UTF8.self)),
        ])
        let result = await client.execute(
            HTTPClientRequest(
                method: "POST", url: tokenURL,
                headers: [(name: "content-type", value: "application/x-www-form-urlencoded")], body: form,
                timeout: timeout))
        switch result {
        case .failure(let error):
            return .failure(.unavailable(.transport(error.code), retryAfter: nil))
        case .success(let response):
            return OAuthTokenAnswer.read(
                status: response.status, body: response.body, retryAfter: response.header("retry-after"), now: now)
        }
    }

    public func send(
        _ template: Template, tokens: [String], credential: ChannelCredential, token: AccessToken, client: HTTPClient,
        timeout: Duration, now: Date, done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        let request = HTTPClientRequest(
            method: "POST", url: sendURL(credential),
            headers: [
                (name: "authorization", value: "Bearer " + token.value),
                (name: "content-type", value: "application/json; charset=UTF-8"),
            ] + extraHeaders(now: now), body: body(template, tokens: tokens), timeout: timeout,
            maxResponseBytes: HTTPClientRequest.maxBatchResponseBytes(tokens: tokens.count))
        client.execute(
            request, tokens: tokens,
            read: {
                read(status: $0.status, body: $0.body, tokens: tokens, retryAfter: $0.header("retry-after"), now: now)
            },
            done: done)
    }
}

/// What a used-up daily quota does to the pushes it stops.
public enum DailyQuotaPolicy: Sendable {
    /// Skipped, reason `quota`: today's message is not worth tomorrow.
    case skip
    /// Kept, reason `quota`, and sent again after midnight China time (within the message's
    /// expiration, like any retry).
    case holdUntilTomorrow
}

extension TokenBatchService {
    public var dailyQuotaPolicy: DailyQuotaPolicy { .skip }
}

/// What a service's answer to one request means.
public enum TokenBatchAnswer: Equatable, Sendable {
    /// Each token's outcome, in request order.
    case outcomes([SendOutcome])
    /// The access token was refused (expired, or not the service's): refresh, send again once.
    case refreshAuth(SendReason)
    /// The credential itself is refused: hold the pushes, mark the credential failing.
    case credentialRefused(SendReason)
    /// The app's daily quota with the service is used up (its own code, e.g. `33`, `10070`,
    /// `200001`): this chunk and every later push of the credential until the service's next
    /// day are skipped `quota`, not retried into the limit.
    case dailyQuota(SendReason)
}

/// Sends pushes to a token-batch service: consecutive pushes with one payload share a request
/// of up to `tokensPerRequest` tokens; a refused access token is refreshed and the request
/// sent again once; a second refusal marks the credential failing; a used-up daily quota skips
/// the credential's pushes until the service's next day.
public final class TokenBatchTransport<Service: TokenBatchService>: PushTransport {
    let service: Service
    let client: HTTPClient
    let resolver: ChannelCredentialResolver
    let requestTimeout: Duration
    let tokensPerRequest: Int
    let clock: any Clock
    let logger: Logger
    public let tokens: AccessTokenCache
    let quota = DailyQuotaGate()
    /// The receipt tokens of the apps that post their own receipts (a data field each push
    /// carries: such a push cannot share a request with another device's).
    let appReceipts: AppReceiptTokens?

    public init(
        service: Service, client: HTTPClient, resolver: ChannelCredentialResolver, requestTimeout: Duration,
        tokensPerRequest: Int, clock: any Clock, logger: Logger, appReceipts: AppReceiptTokens? = nil
    ) {
        self.appReceipts = appReceipts
        self.service = service
        self.client = client
        self.resolver = resolver
        self.requestTimeout = requestTimeout
        self.tokensPerRequest = max(1, min(tokensPerRequest, service.maxTokens))
        self.clock = clock
        self.logger = logger
        tokens = AccessTokenCache(clock: clock)
    }

    public var statistics: HTTPClientStatistics { client.statistics }

    public func shutdown() {
        client.shutdown()
    }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        for (selector, positions) in batch.positionsBySelector() {
            await send(positions, of: batch.pushes, app: batch.app, selector: selector, report: report)
        }
    }

    private func send(
        _ positions: [Int], of pushes: [OutgoingPush], app: App, selector: String?,
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        let credential: ChannelCredential
        let token: AccessToken
        switch await resolver.resolve(appID: app.id, selector: selector) {
        case .credential(let resolved):
            if let until = quota.exhaustedUntil(resolved, now: clock.now) {
                let outcome = quotaOutcome(until: until)
                return report(positions.map { SendReport(index: $0, outcome: outcome) })
            }
        default:
            break
        }
        switch await resolver.signIn(
            appID: app.id, selector: selector, tokens: tokens, fetch: { await self.fetchToken($0) })
        {
        case .failure(let refusal):
            return report(positions.map { SendReport(index: $0, outcome: refusal.outcome) })
        case .success(let signedIn):
            (credential, token) = signedIn
        }
        let now = clock.now
        // Consecutive pushes with the same content, headers and environment (a one-payload
        // message's page) share requests; per-recipient contents make a request each, as do
        // the pushes of an app that posts its own receipts (each carries its own token).
        var start = 0
        var rendered:
            (
                content: SharedContent, headers: PushHeaders, environment: PushEnvironment, template: Service.Template,
                tooLarge: Bool
            )?
        let receiptTokens = appReceipts.map { tokens in positions.map { tokens.token(for: pushes[$0], app: app) } }
        while start < positions.count {
            let push = pushes[positions[start]]
            let receiptToken = receiptTokens?[start]
            let limit = min(tokensPerRequest, service.maxTokens(headers: push.headers, environment: push.environment))
            var end = start + 1
            while receiptToken == nil, end < positions.count, end - start < limit,
                pushes[positions[end]].content == push.content, pushes[positions[end]].headers == push.headers,
                pushes[positions[end]].environment == push.environment, receiptTokens?[end] == nil
            {
                end += 1
            }
            let chunk = Array(positions[start..<end])
            start = end
            let template: Service.Template
            let tooLarge: Bool
            if receiptToken == nil, let cached = rendered, cached.content == push.content,
                cached.headers == push.headers, cached.environment == push.environment
            {
                template = cached.template
                tooLarge = cached.tooLarge
            } else {
                var content = AppReceiptTokens.content(push.content.content, carrying: receiptToken)
                // Without an alert only a data (pass-through) message can carry the push: not at
                // all on a service without one, and not with no data to pass (a
                // badge-only push: these services set no badge without a notification).
                let badgeOnly = content.data.isEmpty && content.badge != nil && service.carriesBadgeOnly
                if content.isDataOnly, !badgeOnly, !service.carriesDataMessages || content.data.isEmpty {
                    report(chunk.map { SendReport(index: $0, outcome: .skipped(.unsupportedContent)) })
                    continue
                }
                // Services refuse a notification without a title (Push Kit's 80100001): the
                // app's name stands in, as iOS shows it above an alert that has none.
                if !content.isDataOnly, content.title == nil { content.title = app.name }
                template = service.template(
                    content: content, headers: push.headers, environment: push.environment, credential: credential,
                    now: now)
                tooLarge = service.exceedsServiceLimit(template)
                if receiptToken == nil { rendered = (push.content, push.headers, push.environment, template, tooLarge) }
            }
            if tooLarge {
                report(chunk.map { SendReport(index: $0, outcome: .skipped(.payloadTooLarge)) })
                continue
            }
            let deviceTokens = chunk.map { pushes[$0].token }
            post(template, tokens: deviceTokens, token: token, credential: credential, retriedAuth: false) { outcomes in
                report(zip(chunk, outcomes).map { SendReport(index: $0, outcome: $1) })
            }
        }
    }

    /// One chunk; `done` gets each token's outcome in order, on the client's thread (or a
    /// task's, when the access token had to be replaced).
    private func post(
        _ template: Service.Template, tokens deviceTokens: [String], token: AccessToken, credential: ChannelCredential,
        retriedAuth: Bool, done: @escaping @Sendable ([SendOutcome]) -> Void
    ) {
        service.send(
            template, tokens: deviceTokens, credential: credential, token: token, client: client,
            timeout: requestTimeout, now: clock.now
        ) { [self] answer in
            switch answer {
            case .outcomes(let outcomes):
                done(outcomes)
            case .refreshAuth(let reason):
                Task {
                    switch await resolver.reauthenticate(
                        credential, refused: token, reason: reason, alreadyRetried: retriedAuth, tokens: tokens,
                        fetch: { await self.fetchToken($0) })
                    {
                    case .success(let fresh):
                        post(
                            template, tokens: deviceTokens, token: fresh, credential: credential, retriedAuth: true,
                            done: done)
                    case .failure(let refusal):
                        done(Array(repeating: refusal.outcome, count: deviceTokens.count))
                    }
                }
            case .credentialRefused(let reason):
                Task {
                    await resolver.markFailing(credential, reason: reason)
                    done(Array(repeating: .held(reason), count: deviceTokens.count))
                }
            case .dailyQuota(let reason):
                let until = quota.exhausted(credential, now: clock.now)
                logger.warning(
                    "an Android service's daily quota is used up; the credential's pushes wait for its next day",
                    metadata: [
                        "credential": "\(credential.id)", "reason": "\(reason)",
                        "policy": "\(service.dailyQuotaPolicy)",
                    ])
                done(Array(repeating: quotaOutcome(until: until), count: deviceTokens.count))
            }
        }
    }

    /// A push stopped by a used-up daily quota: skipped, or retried once the quota resets.
    private func quotaOutcome(until: Date) -> SendOutcome {
        switch service.dailyQuotaPolicy {
        case .skip:
            return .skipped(.quota)
        case .holdUntilTomorrow:
            let seconds = max(1, until.timeIntervalSince(clock.now).rounded(.up))
            return .retry(.quota, after: .seconds(Int64(seconds)))
        }
    }

    private func fetchToken(_ credential: ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> {
        await service.signIn(credential, client: client, timeout: requestTimeout, now: clock.now)
    }

    /// Signs in with `credential` once, past the token cache: a credential just added is
    /// checked with the service, whose answer is reported (a refusal is not cached).
    public func checkSignIn(_ credential: ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> {
        let signedIn = await fetchToken(credential)
        guard case .success(let token) = signedIn else { return signedIn }
        if let failure = await service.confirm(credential, token: token, client: client, timeout: requestTimeout) {
            return .failure(failure)
        }
        return signedIn
    }

    /// Until when the credential's daily quota is used up, as the service last said; nil when
    /// it is not (or the day has turned).
    public func quotaExhausted(credentialID: Int64) -> Date? {
        quota.until(credentialID: credentialID, now: clock.now)
    }
}

/// Credentials whose daily quota the service said is used up, until the service's next day
/// (midnight in China, where the services with a daily quota count their days).
final class DailyQuotaGate: Sendable {
    private let until = Mutex<[Int64: Date]>([:])
    private static let china = TimeZone(identifier: "Asia/Shanghai")!

    /// Marks the credential's quota used up until the next midnight in China; returns it.
    func exhausted(_ credential: ChannelCredential, now: Date) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = Self.china
        let tomorrow = calendar.startOfDay(for: now).addingTimeInterval(86_400)
        until.withLock { $0[credential.id] = tomorrow }
        return tomorrow
    }

    /// When the credential's used-up quota resets; nil when it is not used up.
    func exhaustedUntil(_ credential: ChannelCredential, now: Date) -> Date? {
        until(credentialID: credential.id, now: now)
    }

    func until(credentialID: Int64, now: Date) -> Date? {
        until.withLock { until in
            guard let end = until[credentialID] else { return nil }
            if end > now { return end }
            until[credentialID] = nil
            return nil
        }
    }
}
