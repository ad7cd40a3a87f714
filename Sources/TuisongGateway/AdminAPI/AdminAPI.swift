import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTP
import TuisongPlugin
import TuisongStore

/// The store as the console sees it.
typealias AdminStore = Store & SettingsStore & MessageStore & TemplateStore & ConsoleStore
    & ChannelCredentialStore & ConsoleSessionStore & ReceiptStore & ReceiptSettingsStore

/// The admin API under `/admin/api/`, used by the console in `web/`.
///
/// Every route but `POST /admin/api/login` needs a session cookie (401 without one, for
/// unknown paths too, so the API's shape is not visible before login); every method other
/// than GET also needs the session's CSRF token in `X-CSRF-Token` (403 otherwise). Secrets
/// (vendor secret keys, p8 keys, p12 files and passwords) go in and never come out.
/// See `docs/admin-api.md`.
struct AdminAPI: Sendable {
    let store: any AdminStore
    let sealer: any SecretSealer
    let apiKeys: APIKeyAuthenticator?
    /// Where test pushes go; nil when this process runs no delivery engine.
    let gateway: (any PushGateway)?
    /// Where app changes go to the other nodes; nil: this process only.
    let changes: (any StoreChangeFeed)?
    /// Checks, stores and tests uploaded file credentials; nil in a build without a transport
    /// that takes them.
    let credentials: (any AdminCredentialBackend)?
    /// The gateway's app cache; nil when this process runs no delivery engine.
    let apps: AppCache?
    let config: GatewayConfig
    /// The mounted providers: their device columns show in the device views.
    let providers: [any PushProvider]
    let clock: any Clock
    let logger: Logger
    let sessions: AdminSessions
    let throttle: LoginThrottle
    /// Webhook endpoints; nil in a process that sends none.
    let webhooks: WebhookEndpoints?
    /// The apps' callback credentials with the services that sign their receipts: in a gateway,
    /// the receipt routes' own service, so a change here drops what they cached.
    let receiptCredentials: ReceiptCallbackCredentialService
    /// The base URL the services post receipts to (`receipts.public_url`, or local mode's
    /// listener); empty while receipts are off.
    let receiptBaseURL: @Sendable () -> String
    /// Password checks, a few at a time off the cooperative pool: PBKDF2 is deliberately slow,
    /// and a burst of logins must neither occupy every cooperative thread nor queue the
    /// operator's login behind every guess.
    let passwordChecks = PasswordVerifier(concurrency: max(2, ProcessInfo.processInfo.activeProcessorCount))

    static let prefix = "/admin/api"
    /// The router's errors that depend on which admin routes exist: 401 without a session.
    static let errorsBehindLogin: Set<Int> = [404, 405, 413]

    init(
        store: any AdminStore, masterKey: MasterKey, apiKeys: APIKeyAuthenticator?, gateway: (any PushGateway)?,
        credentials: (any AdminCredentialBackend)? = nil, apps: AppCache? = nil, config: GatewayConfig,
        providers: [any PushProvider] = [], clock: any Clock, logger: Logger,
        sessions: AdminSessions? = nil, throttle: LoginThrottle? = nil, changes: (any StoreChangeFeed)? = nil,
        webhooks: WebhookEndpoints? = nil, receiptBaseURL: (@Sendable () -> String)? = nil,
        receiptCredentials: ReceiptCallbackCredentialService? = nil
    ) {
        self.webhooks = webhooks
        self.receiptCredentials =
            receiptCredentials
            ?? ReceiptCallbackCredentialService(
                store: store, masterKey: masterKey, registry: config.transports.registry, clock: clock)
        let configured = config.receipts.publicURL
        self.receiptBaseURL = receiptBaseURL ?? { configured }
        self.changes = changes
        self.store = store
        self.sealer = MasterKeySealer(masterKey: masterKey)
        self.apiKeys = apiKeys
        self.gateway = gateway
        self.credentials = credentials
        self.apps = apps
        self.config = config
        self.providers = providers
        self.clock = clock
        self.logger = logger
        self.sessions = sessions ?? AdminSessions(store: store, clock: clock)
        self.throttle = throttle ?? LoginThrottle(clock: clock)
    }

    /// Every change to an app (bundle id, key, vendor settings, deletion) goes through here, so
    /// the delivery path and the API key cache see it at once, on this node and (through the
    /// store's change feed) on the others.
    func appChanged(_ id: Int64) async {
        if let apps {
            apps.changed(id: id)
        } else {
            apiKeys?.forget(app: id)
        }
        await changes?.publish(.app(id))
    }

    func register(on router: Router) {
        let sessions = self.sessions
        router.setErrorResponder(forPrefix: Self.prefix + "/") { error, request in
            // Without a session every path is 401, existing or not: what tells the API's shape
            // (no such path, a wrong method, a route's body limit). Synchronous, so only the
            // sessions this node has seen count (another node's session gets a 401 here). The
            // front door's refusals (framing, sizes of the head, an undecodable target) come
            // before routing and authentication and are answered as on every other path.
            if Self.errorsBehindLogin.contains(error.status), !sessions.knownSession(for: request) {
                return AdminError.unauthorized.response
            }
            return AdminError(httpError: error).response
        }
        router.add(.POST, Self.prefix + "/login", bodyLimit: 4096) { request in
            await login(request)
        }
        add(.POST, "/logout", on: router) { request in
            try await sessions.end(for: request)
            var response = Response.empty()
            response.headers.add(name: "Set-Cookie", value: sessions.clearCookie(secure: secureCookies(request)))
            return response
        }
        add(.GET, "/session", on: router) { request in
            guard let session = try await sessions.session(for: request) else { throw AdminError.unauthorized }
            return .json(object: [
                "csrf_token": session.csrfToken,
                "version": TuisongVersion.current,
                // The transport list and their declared credential forms, so the console's
                // services and the fields it asks for are this gateway's.
                "features": [
                    "push": gateway != nil, "credentials": credentials != nil,
                    "android_channels": config.transports.registry.withCredentialForms.map(\.name),
                    "transports": config.transports.registry.formsObject,
                    // The form of the service whose credentials are uploaded files, if any.
                    "uploaded_files": config.transports.registry.uploadedFormObject ?? NSNull(),
                ] as [String: Any],
                "idle_timeout_seconds": Int(sessions.idleTimeout),
            ])
        }
        add(.GET, "/vendors", on: router) { _ in
            .json(object: ["vendors": AdminVendorSettings.schemaObject()])
        }
        AdminAppsAPI(api: self).register(on: router)
        AdminTemplatesAPI(api: self).register(on: router)
        AdminDevicesAPI(api: self).register(on: router)
        AdminPushAPI(api: self).register(on: router)
        AdminMonitorAPI(api: self).register(on: router)
        AdminReceiptsAPI(api: self).register(on: router)
        if let credentials {
            AdminCredentialsAPI(api: self, backend: credentials).register(on: router)
        }
        if let webhooks {
            AdminWebhooksAPI(api: self, webhooks: webhooks).register(on: router)
        }
    }

    /// Wraps the router's middleware for the one admin answer no route of ours gives: the
    /// router's own OPTIONS (204 and `Allow`) skips the routes' session check, and would tell
    /// which admin paths exist (a 401 for the others). Without a session it is 401 like every
    /// other admin request; every route answers through `guarded`, every error through the
    /// prefix's responder, both of which check the session themselves.
    func gate(_ request: Request, _ next: Handler) async -> Response {
        guard request.method == .OPTIONS, request.path.hasPrefix(Self.prefix + "/") else { return await next(request) }
        do {
            guard try await sessions.session(for: request) != nil else { return AdminError.unauthorized.response }
        } catch {
            logger.warning("admin API: cannot look up the session", metadata: ["error": "\(error)"])
            return AdminError.storeUnavailable(error).response
        }
        return AdminHeaders.apply(to: await next(request))
    }

    /// Mounts a handler behind the session and CSRF checks, rendering its errors.
    func add(
        _ method: HTTPMethod, _ path: String, bodyLimit: Int? = nil, on router: Router,
        _ handler: @escaping @Sendable (Request) async throws -> Response
    ) {
        router.add(method, Self.prefix + path, bodyLimit: bodyLimit) { request in
            await guarded(request, handler)
        }
    }

    func guarded(_ request: Request, _ handler: (Request) async throws -> Response) async -> Response {
        let found: AdminSession?
        do {
            found = try await sessions.session(for: request)
        } catch {
            logger.warning("admin API: cannot look up the session", metadata: ["error": "\(error)"])
            return AdminError.storeUnavailable(error).response
        }
        guard let session = found else { return AdminError.unauthorized.response }
        if request.method != .GET && request.method != .HEAD && !AdminSessions.csrfMatches(request, session) {
            return AdminError.csrf.response
        }
        do {
            return AdminHeaders.apply(to: try await handler(request))
        } catch let error as AdminError {
            return error.response
        } catch let error as HTTPError {
            return AdminError(httpError: error).response
        } catch let error as NativeAPIError {
            // Shared parsers (NativePushRequest) speak the native API's error type.
            return AdminError(error.status, error.code, error.message).response
        } catch let error as StoreError {
            switch error.code {
            case .notFound: return AdminError(404, "not_found", "no such item (it may have just been deleted)").response
            case .conflict: return AdminError(409, "conflict", "that conflicts with an existing item").response
            case .invalidCursor: return AdminError(400, "invalid_cursor", "the page cursor is not valid").response
            case .unavailable, .leaseLost:
                logger.warning("admin API: store unavailable", metadata: ["error": "\(error)"])
                return AdminError.storeUnavailable(error).response
            }
        } catch let error as PayloadError {
            return AdminError(
                400, error.code == .tooLarge ? "notification_too_large" : "invalid_notification", error.message
            )
            .response
        } catch {
            // The error's text may hold request data; log its type and route only.
            logger.error(
                "admin API request failed",
                metadata: [
                    "method": "\(request.method.rawValue)", "path": "\(request.path)", "error": "\(type(of: error))",
                ])
            return AdminError(500, "internal_error", "internal error; see the gateway log").response
        }
    }

    /// Cookies get `Secure` when this request came over TLS or the console's public URL is
    /// https (TLS ended at a proxy in front).
    func secureCookies(_ request: Request) -> Bool {
        request.isTLS || config.web.publicURL.lowercased().hasPrefix("https://")
    }

    // MARK: login

    private func login(_ request: Request) async -> Response {
        let address = request.remoteAddress ?? "unknown"
        if let wait = throttle.waitTime(for: address) {
            return Self.tooManyAttempts(wait)
        }
        let password: String
        do {
            let body = try AdminBody(request)
            guard let given = try body.string("password", maxLength: 1024), !given.isEmpty else {
                throw AdminError.invalid("password", "\"password\" is required")
            }
            password = given
        } catch let error as AdminError {
            return error.response
        } catch {
            return AdminError(400, "bad_request", "malformed request").response
        }
        let stored: String?
        do {
            stored = try await store.setting(AdminPassword.settingKey)
        } catch {
            logger.warning("admin login: cannot read the password hash", metadata: ["error": "\(type(of: error))"])
            return AdminError.storeUnavailable(error).response
        }
        // Requests that waited for a check see a lock set meanwhile: such a request is answered
        // 429 without using a slot (checked again once its turn comes).
        let throttle = self.throttle
        let valid = await passwordChecks.verify(standing: throttle.standing(of: address)) {
            guard throttle.waitTime(for: address) == nil else { return false }
            guard let stored else { return false }
            return AdminPassword.matches(password, storedHash: stored)
        }
        if !valid, let wait = throttle.waitTime(for: address) {
            return Self.tooManyAttempts(wait)
        }
        guard valid else {
            let delay = throttle.recordFailure(for: address)
            logger.warning("console login failed", metadata: ["address": "\(address)"])
            return AdminError(
                401, "invalid_password", "wrong password",
                retryAfter: delay > 0 ? Int(delay.rounded(.up)) : nil
            ).response
        }
        throttle.recordSuccess(for: address)
        let cookie: String
        let session: AdminSession
        do {
            (cookie, session) = try await sessions.create()
        } catch {
            logger.warning("console login: cannot store the session", metadata: ["error": "\(error)"])
            return AdminError.storeUnavailable(error).response
        }
        logger.info("console login", metadata: ["address": "\(address)"])
        var response = Response.json(object: [
            "csrf_token": session.csrfToken,
            "idle_timeout_seconds": Int(sessions.idleTimeout),
        ])
        response.headers.add(name: "Set-Cookie", value: sessions.setCookie(cookie, secure: secureCookies(request)))
        return AdminHeaders.apply(to: response)
    }

    private static func tooManyAttempts(_ wait: Int) -> Response {
        AdminError(
            429, "too_many_attempts", "too many failed logins; try again in \(wait) s", retryAfter: wait
        ).response
    }
}

/// Timestamps in admin answers: RFC 3339 UTC with milliseconds, or null.
enum AdminTime {
    static func string(_ date: Date?) -> Any {
        orNull(date.map(ISO8601.string))
    }
}
