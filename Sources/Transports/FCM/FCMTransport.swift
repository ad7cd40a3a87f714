import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

/// Sends pushes to FCM HTTP v1: one `POST /v1/projects/{project}/messages:send` per device,
/// multiplexed over HTTP/2 by the HTTP client, signed in with the app's service account
/// (docs/reference/android.md, FCM).
///
/// The service account's RS256-signed assertion is traded at its `token_uri` for an access
/// token, cached and refreshed before it expires (`AccessTokenCache`). A 401 drops the token
/// and sends again once with a new one; a second refusal, or a token endpoint refusing the
/// account, marks the credential failing and holds its pushes.
public final class FCMTransport: PushTransport {
    public struct Endpoints: Sendable {
        /// Where messages are sent: `https://fcm.googleapis.com`.
        public var sendURL: String
        /// Replaces every account's `token_uri` when set (a test's or local mode's look-alike).
        public var tokenURL: String?

        public init(sendURL: String = "https://fcm.googleapis.com", tokenURL: String? = nil) {
            self.sendURL = sendURL.hasSuffix("/") ? String(sendURL.dropLast()) : sendURL
            self.tokenURL = tokenURL
        }
    }

    /// The OAuth scope FCM's send API requires.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    /// A stored service account, parsed once: its key and where its token requests go.
    private struct Account: Sendable {
        var serviceAccount: FCMServiceAccount
        var key: PrivateKey
    }

    /// One request per device costs libcurl about 30 µs of CPU on its client's one thread:
    /// several clients (threads, each with its own connections) share the sends.
    let clients: [HTTPClient]
    private let nextClient = Atomic<Int>(0)
    let resolver: ChannelCredentialResolver
    let endpoints: Endpoints
    let requestTimeout: Duration
    let clock: any Clock
    let logger: Logger
    public let tokens: AccessTokenCache
    private let accounts = Mutex<[Int64: (secret: [UInt8], account: Account)]>([:])
    /// The receipt tokens of the apps that post their own receipts (a `data` field).
    let appReceipts: AppReceiptTokens?

    public init(
        clients: [HTTPClient], resolver: ChannelCredentialResolver, endpoints: Endpoints, requestTimeout: Duration,
        clock: any Clock, logger: Logger, appReceipts: AppReceiptTokens? = nil
    ) {
        precondition(!clients.isEmpty, "FCMTransport needs at least one HTTP client")
        self.appReceipts = appReceipts
        self.clients = clients
        self.resolver = resolver
        self.endpoints = endpoints
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.logger = logger
        tokens = AccessTokenCache(clock: clock)
    }

    /// The clients' statistics, summed.
    public var statistics: HTTPClientStatistics {
        clients.map(\.statistics).reduce(into: HTTPClientStatistics()) { sum, s in
            sum.openConnections += s.openConnections
            sum.connectionsOpened += s.connectionsOpened
            sum.requestsStarted += s.requestsStarted
            sum.requestsCompleted += s.requestsCompleted
            sum.requestsFailed += s.requestsFailed
            sum.inFlight += s.inFlight
        }
    }

    /// The client of the next send, in turn.
    private var client: HTTPClient {
        clients.count == 1 ? clients[0] : clients[nextClient.add(1, ordering: .relaxed).oldValue % clients.count]
    }

    public func shutdown() {
        for client in clients { client.shutdown() }
    }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        for (selector, positions) in batch.positionsBySelector() {
            await send(positions, of: batch.pushes, app: batch.app, selector: selector, report: report)
        }
    }

    private func send(
        _ indices: [Int], of pushes: [OutgoingPush], app: App, selector: String?,
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        let credential: ChannelCredential
        let token: AccessToken
        switch await resolver.signIn(
            appID: app.id, selector: selector, tokens: tokens, fetch: { await self.fetchToken($0) })
        {
        case .failure(let refusal):
            return report(indices.map { SendReport(index: $0, outcome: refusal.outcome) })
        case .success(let signedIn):
            (credential, token) = signedIn
        }
        let url =
            endpoints.sendURL + "/v1/projects/" + percentEncodedPathSegment(credential.vendorAppID)
            + "/messages:send"
        let now = clock.now
        // Every request of the chunk carries the same headers (one slist in the client's handles).
        let headers = Self.requestHeaders(token)
        var requests: [HTTPClientRequest] = []
        var requested: [Int] = []
        requests.reserveCapacity(indices.count)
        requested.reserveCapacity(indices.count)
        // Pushes of one message share their content and headers: rendered once.
        var template: (content: SharedContent, headers: PushHeaders, rendered: FCMMessage.Template)?
        var tooLarge: [SendReport] = []
        for index in indices {
            let push = pushes[index]
            let rendered: FCMMessage.Template
            if let receiptToken = appReceipts?.token(for: push, app: app) {
                // The app's receipt token in `data`: this device's own rendering.
                rendered = FCMMessage.Template(
                    content: AppReceiptTokens.content(push.content.content, carrying: receiptToken),
                    headers: push.headers, now: now)
            } else if let cached = template, cached.content == push.content, cached.headers == push.headers {
                rendered = cached.rendered
            } else {
                rendered = FCMMessage.Template(content: push.content.content, headers: push.headers, now: now)
                template = (push.content, push.headers, rendered)
            }
            // What FCM would refuse for its size is skipped, never sent.
            if rendered.payloadBytes > FCMMessage.payloadLimit {
                tooLarge.append(SendReport(index: index, outcome: .skipped(.payloadTooLarge)))
                continue
            }
            requests.append(
                HTTPClientRequest(
                    method: "POST", url: url, headers: headers, body: rendered.body(token: push.token),
                    timeout: requestTimeout, responseHeaders: Self.responseHeaders))
            requested.append(index)
        }
        if !tooLarge.isEmpty { report(tooLarge) }
        guard !requests.isEmpty else { return }
        // One submission for the chunk, and one report per group of answers the client hands
        // over together (MessageRun.record takes a lock and returns permits per call).
        client.execute(requests) { [self, requests, requested] answers in
            var reports: [SendReport] = []
            reports.reserveCapacity(answers.count)
            let now = clock.now
            for (position, result) in answers {
                let index = requested[position]
                switch answer(result, now: now) {
                case .done(let outcome):
                    reports.append(SendReport(index: index, outcome: outcome))
                case .refreshAuth(let reason):
                    refreshAndRetry(
                        requests[position].body, to: url, refused: token, reason: reason, credential: credential,
                        retriedAuth: false
                    ) { report([SendReport(index: index, outcome: $0)]) }
                case .credentialRefused(let reason):
                    holdForRefusal(reason, credential: credential) { report([SendReport(index: index, outcome: $0)]) }
                }
            }
            if !reports.isEmpty { report(reports) }
        }
    }

    /// FCM's answers are read for their status, body and Retry-After alone.
    private static let responseHeaders = ["retry-after"]

    private static func requestHeaders(_ token: AccessToken) -> [(name: String, value: String)] {
        [
            (name: "authorization", value: "Bearer " + token.value),
            (name: "content-type", value: "application/json; charset=UTF-8"),
        ]
    }

    /// What the client's answer to one send means: an outcome now, or a sign-in question first.
    private enum Answer {
        case done(SendOutcome)
        case refreshAuth(SendReason)
        case credentialRefused(SendReason)
    }

    private func answer(_ result: Result<HTTPClientResponse, HTTPClientError>, now: Date) -> Answer {
        let response: HTTPClientResponse
        switch result {
        case .failure(let error):
            return .done(.retry(.transport(error.code), after: nil))
        case .success(let answered):
            response = answered
        }
        switch FCMAnswer.read(
            status: response.status, body: response.body, retryAfter: response.header("retry-after"), now: now)
        {
        case .delivered(let name): return .done(.delivered(serviceMessageID: name))
        case .outcome(let outcome): return .done(outcome)
        case .refreshAuth(let reason): return .refreshAuth(reason)
        case .credentialRefused(let reason): return .credentialRefused(reason)
        }
    }

    /// A 401: a fresh access token (unless this send already had one) and the send again.
    private func refreshAndRetry(
        _ body: [UInt8], to url: String, refused token: AccessToken, reason: SendReason, credential: ChannelCredential,
        retriedAuth: Bool, done: @escaping @Sendable (SendOutcome) -> Void
    ) {
        Task {
            switch await resolver.reauthenticate(
                credential, refused: token, reason: reason, alreadyRetried: retriedAuth, tokens: tokens,
                fetch: { await self.fetchToken($0) })
            {
            case .success(let fresh):
                post(body, to: url, token: fresh, credential: credential, retriedAuth: true, done: done)
            case .failure(let refusal):
                done(refusal.outcome)
            }
        }
    }

    /// A 403 (or a second 401): the credential is failing, the push held.
    private func holdForRefusal(
        _ reason: SendReason, credential: ChannelCredential, done: @escaping @Sendable (SendOutcome) -> Void
    ) {
        Task {
            await resolver.markFailing(credential, reason: reason)
            done(.held(reason))
        }
    }

    /// One send; `done` gets the push's outcome (on the client's thread, or a task's when the
    /// access token had to be replaced).
    private func post(
        _ body: [UInt8], to url: String, token: AccessToken, credential: ChannelCredential, retriedAuth: Bool,
        done: @escaping @Sendable (SendOutcome) -> Void
    ) {
        let request = HTTPClientRequest(
            method: "POST", url: url, headers: Self.requestHeaders(token), body: body, timeout: requestTimeout,
            responseHeaders: Self.responseHeaders)
        client.execute(request) { [self] result in
            switch answer(result, now: clock.now) {
            case .done(let outcome):
                done(outcome)
            case .refreshAuth(let reason):
                refreshAndRetry(
                    body, to: url, refused: token, reason: reason, credential: credential, retriedAuth: retriedAuth,
                    done: done)
            case .credentialRefused(let reason):
                holdForRefusal(reason, credential: credential, done: done)
            }
        }
    }

    // MARK: Access tokens

    /// Signs in with `credential` once, past the token cache: a credential just added is
    /// checked with the service, whose answer is reported (a refusal is not cached).
    public func checkSignIn(_ credential: ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> {
        await fetchToken(credential)
    }

    /// Trades a signed assertion for an access token at the account's token endpoint.
    private func fetchToken(_ credential: ChannelCredential) async -> Result<AccessToken, AccessTokenFailure> {
        let account: Account
        do {
            account = try parsedAccount(credential)
        } catch {
            return .failure(.refused(.credentialUnusable))
        }
        let tokenURL = endpoints.tokenURL ?? account.serviceAccount.tokenURI
        let now = clock.now
        let assertion: String
        do {
            assertion = try FCMAssertion.sign(
                account.serviceAccount, key: account.key, audience: account.serviceAccount.tokenURI, issuedAt: now)
        } catch {
            return .failure(.refused(.credentialUnusable))
        }
        let form = FormEncoding.encode([
            ("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"), ("assertion", assertion),
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

    private func parsedAccount(_ credential: ChannelCredential) throws -> Account {
        if let cached = accounts.withLock({ $0[credential.id] }), cached.secret == credential.secret {
            return cached.account
        }
        let serviceAccount = try FCMServiceAccount(json: credential.secret)
        let account = Account(serviceAccount: serviceAccount, key: try PrivateKey(pem: serviceAccount.privateKeyPEM))
        accounts.withLock { $0[credential.id] = (credential.secret, account) }
        return account
    }
}

/// The JWT a service account signs to ask for an access token (RFC 7523, Google's
/// service-account flow): RS256, `kid` the key's id, `iss` the account, FCM's scope, `aud`
/// the token endpoint, valid for an hour.
enum FCMAssertion {
    static func sign(_ account: FCMServiceAccount, key: PrivateKey, audience: String, issuedAt: Date) throws
        -> String
    {
        var header: [String: JSONValue] = ["alg": "RS256", "typ": "JWT"]
        if let keyID = account.privateKeyID { header["kid"] = .string(keyID) }
        let iat = Int64(issuedAt.timeIntervalSince1970.rounded(.down))
        let claims: JSONValue = [
            "iss": .string(account.clientEmail), "scope": .string(FCMTransport.scope), "aud": .string(audience),
            "iat": .int(iat), "exp": .int(iat + 3600),
        ]
        return try JWT.signRS256(
            header: JSONValue.object(header).serializedString, claims: claims.serializedString, key: key)
    }
}

/// `s` as one path segment: unreserved characters kept, everything else percent-encoded.
func percentEncodedPathSegment(_ s: String) -> String {
    var out = ""
    for byte in s.utf8 {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
            UInt8(ascii: "~"):
            out.unicodeScalars.append(Unicode.Scalar(byte))
        default:
            out += String(format: "%%%02X", byte)
        }
    }
    return out
}
