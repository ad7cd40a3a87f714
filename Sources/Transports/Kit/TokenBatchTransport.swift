import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

/// What a service that takes many device tokens in one request (Huawei Push Kit, Honor
/// Push) tells `TokenBatchTransport`: where to send, how to render, what an answer means.
/// Everything vendor-specific lives in the conformer; the transport does the sending.
public protocol TokenBatchService: Sendable {
    /// A push's message rendered once, to be given each chunk of tokens.
    associatedtype Template

    /// The service's limit of tokens per request.
    var maxTokens: Int { get }
    func sendURL(_ credential: ChannelCredential) -> String
    /// Headers besides authorization and content type (Honor's `timestamp`).
    func extraHeaders(now: Date) -> [(name: String, value: String)]
    func template(content: AndroidContent, headers: PushHeaders, credential: ChannelCredential, now: Date) -> Template
    func body(_ template: Template, tokens: [String]) -> [UInt8]
    func read(status: Int, body: [UInt8], tokens: [String], retryAfter: String?, now: Date) -> TokenBatchAnswer
}

/// What a service's answer to one request means.
public enum TokenBatchAnswer: Equatable, Sendable {
    /// Each token's outcome, in request order.
    case outcomes([SendOutcome])
    /// The access token was refused (expired, or not the service's): refresh, send again once.
    case refreshAuth(SendReason)
    /// The credential itself is refused: hold the pushes, mark the credential failing.
    case credentialRefused(SendReason)
}

/// Sends pushes to a token-batch service, signed in with the app's OAuth 2.0 client (client
/// credentials at `tokenURL`): consecutive pushes with one payload share a request of up to
/// `tokensPerRequest` tokens; a refused access token is refreshed and the request sent again
/// once; a second refusal marks the credential failing.
public final class TokenBatchTransport<Service: TokenBatchService>: PushTransport {
    let service: Service
    let client: HTTPClient
    let resolver: ChannelCredentialResolver
    let tokenURL: String
    let requestTimeout: Duration
    let tokensPerRequest: Int
    let clock: any Clock
    let logger: Logger
    public let tokens: AccessTokenCache

    public init(
        service: Service, client: HTTPClient, resolver: ChannelCredentialResolver, tokenURL: String,
        requestTimeout: Duration, tokensPerRequest: Int, clock: any Clock, logger: Logger
    ) {
        self.service = service
        self.client = client
        self.resolver = resolver
        self.tokenURL = tokenURL
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
        switch await resolver.signIn(
            appID: app.id, selector: selector, tokens: tokens, fetch: { await self.fetchToken($0) })
        {
        case .failure(let refusal):
            return report(positions.map { SendReport(index: $0, outcome: refusal.outcome) })
        case .success(let signedIn):
            (credential, token) = signedIn
        }
        let url = service.sendURL(credential)
        let now = clock.now
        // Consecutive pushes with the same payload and headers (a one-payload message's page)
        // share requests; per-recipient payloads make a request each.
        var start = 0
        var rendered: (payload: [UInt8], headers: PushHeaders, template: Service.Template)?
        while start < positions.count {
            let push = pushes[positions[start]]
            var end = start + 1
            while end < positions.count, end - start < tokensPerRequest,
                pushes[positions[end]].payload == push.payload, pushes[positions[end]].headers == push.headers
            {
                end += 1
            }
            let chunk = Array(positions[start..<end])
            start = end
            let template: Service.Template
            if let cached = rendered, cached.payload == push.payload, cached.headers == push.headers {
                template = cached.template
            } else {
                var content: AndroidContent
                do {
                    content = try AndroidContent(apnsPayload: push.payload)
                } catch {
                    report(chunk.map { SendReport(index: $0, outcome: .failed(.service("InvalidPayload"))) })
                    continue
                }
                // Huawei and Honor refuse a notification without a title (80100001): the app's
                // name stands in, as iOS shows it above an alert that has none.
                if !content.isDataOnly, content.title == nil { content.title = app.name }
                template = service.template(content: content, headers: push.headers, credential: credential, now: now)
                rendered = (push.payload, push.headers, template)
            }
            let deviceTokens = chunk.map { pushes[$0].token }
            post(
                service.body(template, tokens: deviceTokens), tokens: deviceTokens, to: url, token: token,
                credential: credential, retriedAuth: false
            ) { outcomes in
                report(zip(chunk, outcomes).map { SendReport(index: $0, outcome: $1) })
            }
        }
    }

    /// One request; `done` gets each token's outcome in order, on the client's thread (or a
    /// task's, when the access token had to be replaced).
    private func post(
        _ body: [UInt8], tokens deviceTokens: [String], to url: String, token: AccessToken,
        credential: ChannelCredential, retriedAuth: Bool, done: @escaping @Sendable ([SendOutcome]) -> Void
    ) {
        let request = HTTPClientRequest(
            method: "POST", url: url,
            headers: [
                (name: "authorization", value: "Bearer " + token.value),
                (name: "content-type", value: "application/json; charset=UTF-8"),
            ] + service.extraHeaders(now: clock.now), body: body, timeout: requestTimeout)
        client.execute(request) { [self] result in
            let response: HTTPClientResponse
            switch result {
            case .failure(let error):
                return done(Array(repeating: .retry(.transport(error.code), after: nil), count: deviceTokens.count))
            case .success(let answered):
                response = answered
            }
            switch service.read(
                status: response.status, body: response.body, tokens: deviceTokens,
                retryAfter: response.header("retry-after"), now: clock.now)
            {
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
                            body, tokens: deviceTokens, to: url, token: fresh, credential: credential,
                            retriedAuth: true, done: done)
                    case .failure(let refusal):
                        done(Array(repeating: refusal.outcome, count: deviceTokens.count))
                    }
                }
            case .credentialRefused(let reason):
                Task {
                    await resolver.markFailing(credential, reason: reason)
                    done(Array(repeating: .held(reason), count: deviceTokens.count))
                }
            }
        }
    }

    /// OAuth 2.0 client credentials (RFC 6749 §4.4) at the service's token endpoint.
    private func fetchToken(_ credential: ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> {
        let now = clock.now
        let form = FormEncoding.encode([
            ("grant_type", "client_credentials"), ("client_id", credential.clientID),
            ("client_secret", String(decoding: credential.secret, as: UTF8.self)),
        ])
        let result = await client.execute(
            HTTPClientRequest(
                method: "POST", url: tokenURL,
                headers: [(name: "content-type", value: "application/x-www-form-urlencoded")], body: form,
                timeout: requestTimeout))
        switch result {
        case .failure(let error):
            return .failure(.unavailable(.transport(error.code), retryAfter: nil))
        case .success(let response):
            return OAuthTokenAnswer.read(
                status: response.status, body: response.body, retryAfter: response.header("retry-after"), now: now)
        }
    }
}
