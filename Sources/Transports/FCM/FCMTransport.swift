import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTP2Client
import TuisongHTTPClient
import TuisongTransportKit

/// Sends pushes to FCM HTTP v1: one `POST /v1/projects/{project}/messages:send` per device,
/// multiplexed over HTTP/2 by the shared nghttp2 engine (`HTTP2ConnectionPool`, the one every
/// HTTP/2 service sends through), signed in with the app's service account (docs/reference/android.md, FCM).
///
/// The service account's RS256-signed assertion is traded at its `token_uri` for an access
/// token, cached and refreshed before it expires (`AccessTokenCache`). A 401 drops the token
/// and sends again once with a new one; a second refusal, or a token endpoint refusing the
/// account, marks the credential failing and holds its pushes.
public final class FCMTransport: PushTransport {
    public struct Endpoints: Sendable {
        /// Where messages are sent: `https://fcm.googleapis.com` (`https://host[:port]`, no path).
        public var sendURL: String
        /// Replaces every account's `token_uri` when set (a test's or local mode's look-alike).
        public var tokenURL: String?

        public init(sendURL: String = "https://fcm.googleapis.com", tokenURL: String? = nil) {
            self.sendURL = sendURL.hasSuffix("/") ? String(sendURL.dropLast()) : sendURL
            self.tokenURL = tokenURL
        }
    }

    /// How the sends' HTTP/2 pools are made.
    public struct Connections: Sendable {
        /// Pools the sends are spread over, each its own event-loop thread.
        public var pools = 1
        /// HTTP/2 connections each pool keeps open to FCM.
        public var connectionsPerPool = 2
        /// DNS + TCP + TLS + the server's first SETTINGS.
        public var connectTimeout: Duration = .seconds(10)
        /// A PEM bundle of CAs trusted instead of the system's (a test's look-alike).
        public var caFile: String?

        public init(
            pools: Int = 1, connectionsPerPool: Int = 2, connectTimeout: Duration = .seconds(10), caFile: String? = nil
        ) {
            self.pools = pools
            self.connectionsPerPool = connectionsPerPool
            self.connectTimeout = connectTimeout
            self.caFile = caFile
        }
    }

    /// The OAuth scope FCM's send API requires.
    static let scope = "https://www.googleapis.com/auth/firebase.messaging"

    /// A stored service account, parsed once: its key and where its token requests go.
    private struct Account: Sendable {
        var serviceAccount: FCMServiceAccount
        var key: PrivateKey
    }

    /// The sends' pools (each one event-loop thread with its connections), taken in turn.
    let pools: [HTTP2ConnectionPool]
    private let nextPool = Atomic<Int>(0)
    /// The token endpoint's client (libcurl): an access token lives an hour, so its fetches are rare.
    let tokenClient: HTTPClient
    /// `:path` of every send of a project, built once per project.
    private let sendPaths = Mutex<[String: String]>([:])
    let resolver: ChannelCredentialResolver
    let endpoints: Endpoints
    let requestTimeout: Duration
    let clock: any Clock
    let logger: Logger
    public let tokens: AccessTokenCache
    private let accounts = Mutex<[Int64: (secret: [UInt8], account: Account)]>([:])
    /// The receipt tokens of the apps that post their own receipts (a `data` field).
    let appReceipts: AppReceiptTokens?

    /// - Parameter tokenClient: the HTTP client access tokens are fetched with.
    /// - Throws: `HTTP2ClientError` when `endpoints.sendURL` is not `https://host[:port]` or a
    ///   pool cannot start.
    public init(
        connections: Connections, tokenClient: HTTPClient, resolver: ChannelCredentialResolver, endpoints: Endpoints,
        requestTimeout: Duration, clock: any Clock, logger: Logger, appReceipts: AppReceiptTokens? = nil
    ) throws(HTTP2ClientError) {
        guard let endpoint = HTTP2Endpoint(url: endpoints.sendURL) else {
            throw HTTP2ClientError(
                .connectFailed, "FCM's send URL must be https://host[:port] with no path, not \(endpoints.sendURL)")
        }
        let tlsContext: TLSContext
        do {
            tlsContext = try TLSContext.client(
                alpn: ["h2"], trustSystemCAs: connections.caFile == nil, caFile: connections.caFile)
        } catch {
            throw HTTP2ClientError(.tlsFailed, "TLS context: \(error.message)")
        }
        var configuration = HTTP2ConnectionPool.Configuration(label: "FCM", endpoint: endpoint)
        configuration.connections = max(1, connections.connectionsPerPool)
        configuration.connectTimeout = connections.connectTimeout
        configuration.requestTimeout = requestTimeout
        configuration.responseHeaders = Self.responseHeaders
        // FCM's answers are small JSON (a message name, or an error with its details).
        configuration.maxResponseBodyBytes = 64 * 1024
        var pools: [HTTP2ConnectionPool] = []
        for _ in 0..<max(1, connections.pools) {
            pools.append(try HTTP2ConnectionPool(configuration: configuration, tlsContext: tlsContext, logger: logger))
        }
        self.pools = pools
        self.tokenClient = tokenClient
        self.appReceipts = appReceipts
        self.resolver = resolver
        self.endpoints = endpoints
        self.requestTimeout = requestTimeout
        self.clock = clock
        self.logger = logger
        tokens = AccessTokenCache(clock: clock)
    }

    /// The sends' figures (the pools', summed): connections to FCM and requests on them. The
    /// token endpoint's client is not counted.
    public var statistics: HTTPClientStatistics {
        pools.map(\.statistics).reduce(into: HTTPClientStatistics()) { sum, s in
            sum.openConnections += s.liveConnections
            sum.connectionsOpened += s.connectionsOpened + s.connectFailures
            sum.requestsStarted += s.streamsOpened
            sum.requestsCompleted += s.responses
            sum.requestsFailed += s.timeouts
            sum.inFlight += s.inFlight + s.queued
        }
    }

    /// The pool of the next send, in turn.
    private var pool: HTTP2ConnectionPool {
        pools.count == 1 ? pools[0] : pools[nextPool.add(1, ordering: .relaxed).oldValue % pools.count]
    }

    public func shutdown() async {
        tokenClient.shutdown()
        for pool in pools { await pool.shutdown() }
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
        let path = sendPath(project: credential.vendorAppID)
        let now = clock.now
        var requests: [FCMSendRequest] = []
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
                FCMSendRequest(path: path, accessToken: token.value, body: rendered.body(token: push.token)))
            requested.append(index)
        }
        if !tooLarge.isEmpty { report(tooLarge) }
        guard !requests.isEmpty else { return }
        // One submission for the chunk, and one report per group of answers the pool hands
        // over together (MessageRun.record takes a lock and returns permits per call).
        pool.send(requests) { [self, requests, requested] answers in
            var reports: [SendReport] = []
            reports.reserveCapacity(answers.count)
            let now = clock.now
            for answered in answers {
                let position = answered.index
                let index = requested[position]
                switch answer(answered.result, now: now) {
                case .done(let outcome):
                    reports.append(SendReport(index: index, outcome: outcome))
                case .refreshAuth(let reason):
                    refreshAndRetry(
                        requests[position].body, to: path, refused: token, reason: reason, credential: credential,
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

    /// `/v1/projects/{project}/messages:send`, the project's id percent-encoded.
    private func sendPath(project: String) -> String {
        if let path = sendPaths.withLock({ $0[project] }) { return path }
        let path = "/v1/projects/" + percentEncodedPathSegment(project) + "/messages:send"
        sendPaths.withLock { $0[project] = path }
        return path
    }

    /// What the client's answer to one send means: an outcome now, or a sign-in question first.
    private enum Answer {
        case done(SendOutcome)
        case refreshAuth(SendReason)
        case credentialRefused(SendReason)
    }

    private func answer(_ result: Result<HTTP2Response, HTTP2ClientError>, now: Date) -> Answer {
        let response: HTTP2Response
        switch result {
        case .failure(let error):
            return .done(.retry(.transport("\(error.code)"), after: nil))
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
        _ body: [UInt8], to path: String, refused token: AccessToken, reason: SendReason, credential: ChannelCredential,
        retriedAuth: Bool, done: @escaping @Sendable (SendOutcome) -> Void
    ) {
        Task {
            switch await resolver.reauthenticate(
                credential, refused: token, reason: reason, alreadyRetried: retriedAuth, tokens: tokens,
                fetch: { await self.fetchToken($0) })
            {
            case .success(let fresh):
                post(body, to: path, token: fresh, credential: credential, retriedAuth: true, done: done)
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

    /// One send; `done` gets the push's outcome (on the pool's thread, or a task's when the
    /// access token had to be replaced).
    private func post(
        _ body: [UInt8], to path: String, token: AccessToken, credential: ChannelCredential, retriedAuth: Bool,
        done: @escaping @Sendable (SendOutcome) -> Void
    ) {
        pool.send([FCMSendRequest(path: path, accessToken: token.value, body: body)]) { [self] answers in
            for answered in answers {
                switch answer(answered.result, now: clock.now) {
                case .done(let outcome):
                    done(outcome)
                case .refreshAuth(let reason):
                    refreshAndRetry(
                        body, to: path, refused: token, reason: reason, credential: credential,
                        retriedAuth: retriedAuth, done: done)
                case .credentialRefused(let reason):
                    holdForRefusal(reason, credential: credential, done: done)
                }
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
        let result = await tokenClient.execute(
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

/// One FCM HTTP v1 send as it goes on the wire: `POST /v1/projects/{project}/messages:send` with
/// the access token as `authorization: Bearer …` and the message JSON.
struct FCMSendRequest: HTTP2RequestHead {
    /// Shared by every request of the project (one string, not one per request).
    var path: String
    var accessToken: String
    var body: [UInt8]

    func writeHeaders(into block: inout HTTP2HeaderBlock, authority: [UInt8], authorization: String?) {
        block.append(":method", "POST")
        block.append(":scheme", "https")
        block.append(":authority", authority)
        block.append(":path", "", path)
        block.append("authorization", "Bearer ", accessToken)
        block.append("content-type", "application/json; charset=UTF-8")
        block.append("content-length", decimal: body.count)
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
