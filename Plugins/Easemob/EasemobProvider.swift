import Foundation
import Logging
import TuisongCore
import TuisongCrypto
import TuisongHTTP
import TuisongPlugin

/// Easemob IM (环信) REST API at Easemob's own paths, `/{org}/{app_name}/…`, for the pairs
/// configured on apps (`tuisong app set-easemob`), so an app server written against Easemob
/// only changes its host. Users, groups and push settings live in the provider's tables;
/// devices, app state and badges are the core's accounts; every message becomes one Tuisong
/// message decided per receiver by `EasemobDeliveryPolicy` (seed 004's rules).
public struct EasemobProvider: PushProvider {
    public static let name = "easemob"
    public static let displayName = LocalizedText(en: "Easemob IM", zh: "环信 IM")

    /// A certificate's notifier name: devices bind with it and are sent through the credential
    /// carrying it. `tuisong credential add --notifier-name NAME`.
    public static let credentialSelector: CredentialSelectorDeclaration? = CredentialSelectorDeclaration(
        cliFlag: "notifier-name",
        help: "Easemob: the certificate (notifier) name devices bind with; they are sent through it.")
    public static var migrations: [PluginMigration] { EasemobSchema.migrations }
    public static var settings: [VendorSetting] { EasemobAppSettings.declarations }
    public static var settingsUniqueTogether: [[String]] { [["org", "app_name"]] }
    public static let deviceColumns = [
        DeviceColumn(key: "notifier_name", label: LocalizedText(en: "Easemob notifier_name", zh: "环信推送证书名称")),
        DeviceColumn(key: "device_id", label: LocalizedText(en: "Easemob device_id", zh: "环信 device_id")),
    ]

    public func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        try await store.deviceColumns(appID: appID, deviceIDs: deviceIDs)
    }

    let context: ProviderContext
    let store: EasemobStore
    let directory: EasemobDirectory
    let policy: EasemobDeliveryPolicy
    let limiter: RateLimiter
    /// Growing delays after wrong passwords at `POST token`, per app and user (as the console's
    /// login has per address). Per node: each node counts the guesses it sees.
    let passwordThrottle: LoginThrottle
    /// App and user tokens verified before (`VerifiedEasemobTokens`).
    let verifiedTokens = VerifiedEasemobTokens()

    public init(context: ProviderContext) throws {
        self.context = context
        passwordThrottle = LoginThrottle(clock: context.clock)
        let configuration = try EasemobConfiguration(context.configuration)
        limiter = RateLimiter(
            rate: configuration.requestsPerSecond, burst: configuration.burst, clock: context.clock,
            share: context.nodeShare)
        store = EasemobStore(database: context.database)
        directory = EasemobDirectory(
            apps: context.store, sealer: context.secrets, clock: context.clock, changes: context.appChanges)
        policy = EasemobDeliveryPolicy(
            store: store, templates: context.store, apps: context.store, directory: directory, clock: context.clock)
    }

    public var deliveryPolicy: (any DeliveryPolicy)? { policy }

    var clock: any TuisongCore.Clock { context.clock }
    var accounts: any AccountStore { context.accounts }
    var logger: Logger { context.logger }
    /// The app's templates: the core's, which the console edits too.
    var templates: any TemplateStore { context.store }

    public func register(on router: Router) {
        let directory = self.directory
        // Learn the configured pairs before the first request asks.
        Task { try? await directory.reload() }
        router.addGroup(
            name: Self.name,
            // Configured pairs, and any `/{org}/{app}/<Easemob resource>/…` so that a wrong org
            // or app name is told so in Easemob's words. Routes outside groups still win, but
            // the claiming group renders every error on its paths, so the gateway's own API
            // namespaces are never claimed (`/api/v1/messages/…` keeps the native dialect).
            claims: { path in
                let segments = path.split(separator: "/", omittingEmptySubsequences: true)
                guard segments.count >= 2, !EasemobRoutes.gatewayNamespaces.contains(String(segments[0])) else {
                    return false
                }
                if segments.count >= 3, EasemobRoutes.resources.contains(String(segments[2])) { return true }
                return directory.claims(org: String(segments[0]), app: String(segments[1]))
            },
            errorResponder: EasemobReply.errorResponder
        ) { group in
            EasemobRoutes.register(self, on: group)
        }
    }

    // MARK: Serving one call

    /// Who may make a call.
    enum Access {
        /// `POST token`: no token.
        case open
        /// The app token.
        case app
        /// The app token, or the token of the user named by the path's `{username}`.
        case appOrSelf
    }

    /// One call of a configured app, authenticated.
    struct Call: Sendable {
        var app: App
        var settings: EasemobAppSettings
        var envelope: EasemobCall
        var request: Request
        var principal: EasemobPrincipal?
        var now: Date

        var appID: Int64 { app.id }

        func success(entities: [JSONValue]? = nil, data: JSONValue? = nil, extra: [String: JSONValue] = [:])
            -> Response
        {
            EasemobReply.success(envelope, now: now, entities: entities, data: data, extra: extra)
        }

        func body() throws(EasemobError) -> EasemobObject { try EasemobBody(request.body).object() }

        /// The path's `{username}`, validated and lower-cased.
        func pathUser() throws(EasemobError) -> String {
            try EasemobUsername.validated(request.pathParameters["username"] ?? "")
        }
    }

    /// Resolves the app, authenticates, runs `body` and renders the outcome in Easemob's
    /// dialect. Anything but an `EasemobError` is logged and answered as a 500 without details.
    func serve(
        _ request: Request, resource: String, access: Access, _ body: @Sendable (Call) async throws -> Response
    ) async -> Response {
        let org = request.pathParameters["org"] ?? ""
        let appName = request.pathParameters["app"] ?? ""
        do {
            guard let resolved = try await directory.resolve(org: org, app: appName) else {
                throw EasemobError.applicationNotFound(org: org, app: appName, path: request.path)
            }
            let (app, settings) = (resolved.app, resolved.settings)
            let envelope = EasemobCall(
                org: settings.org, appName: settings.appName, appID: app.id, request: request, resourcePath: resource)
            let now = clock.now
            var call = Call(
                app: app, settings: settings, envelope: envelope, request: request, principal: nil, now: now)
            switch access {
            case .open:
                try limiter.take("\(app.id):token")
            case .app:
                let principal = try await authenticate(request, app: app, settings: settings, now: now)
                try limiter.take("\(app.id)")
                guard principal == .app else {
                    throw EasemobError.unauthorized("this call needs the app's token, not a user token")
                }
                call.principal = principal
            case .appOrSelf:
                let principal = try await authenticate(request, app: app, settings: settings, now: now)
                try limiter.take("\(app.id)")
                if case .user(let name) = principal, name != (try call.pathUser()) {
                    throw EasemobError.unauthorized("a user token may only act for its own user")
                }
                call.principal = principal
            }
            return try await body(call)
        } catch let error as EasemobError {
            return EasemobReply.failure(error, now: clock.now)
        } catch let error as StoreError where error.code == .notFound {
            return EasemobReply.failure(.notFound(), now: clock.now)
        } catch let error as BacklogFull {
            return EasemobReply.failure(.backlogFull(error), now: clock.now)
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning("easemob: store unavailable", metadata: ["path": "\(request.path)", "error": "\(error)"])
            return EasemobReply.failure(.storeUnavailable(error), now: clock.now)
        } catch {
            logger.error(
                "easemob: request failed",
                metadata: ["method": "\(request.method.rawValue)", "path": "\(request.path)", "error": "\(error)"])
            return EasemobReply.failure(.internalError("see the gateway log"), now: clock.now)
        }
    }

    /// The principal of the request's bearer token: the app, or one user.
    func authenticate(_ request: Request, app: App, settings: EasemobAppSettings, now: Date) async throws
        -> EasemobPrincipal
    {
        let token = try EasemobBearer.token(from: request.headers["Authorization"])
        guard let claims = EasemobToken.peek(token), claims.appID == app.id else {
            throw EasemobError.unauthorized("Unable to authenticate due to corrupt access token")
        }
        let key = try await signingKey(appID: app.id)
        // Tokens issued before the upgrade (bound to the secret's value) while the secret has
        // not been set to another value since: a rotation since then revokes them for good.
        let legacy = try await legacyTokensAccepted(appID: app.id, settings: settings)
        switch claims.principal {
        case .app:
            var bindings = [
                EasemobToken.appBinding(
                    clientID: settings.clientID, clientIDRotation: settings.clientIDRotation,
                    secretRotation: settings.clientSecretRotation)
            ]
            // A client id changed since the upgrade has a marker: the old tokens stay dead even
            // when it is changed back.
            if legacy, settings.clientIDRotation.isEmpty {
                bindings.append(
                    EasemobToken.legacyAppBinding(clientID: settings.clientID, clientSecret: settings.clientSecret))
            }
            return try verifiedTokens.verify(token, signingKey: key, bindings: bindings, now: now).principal
        case .user(let name):
            guard let user = try await store.user(appID: app.id, username: name), let hash = user.passwordHash else {
                throw EasemobError.unauthorized("Unable to authenticate: the token's user no longer exists")
            }
            var bindings = [EasemobToken.userBinding(passwordHash: hash, secretRotation: settings.clientSecretRotation)]
            if legacy { bindings.append(EasemobToken.legacyUserBinding(passwordHash: hash)) }
            return try verifiedTokens.verify(token, signingKey: key, bindings: bindings, now: now).principal
        }
    }

    /// Whether tokens bound the way release e167280 bound them are still accepted for the app:
    /// its client secret has the sealed form it had when the database was upgraded.
    func legacyTokensAccepted(appID: Int64, settings: EasemobAppSettings) async throws -> Bool {
        let legacySecret: String
        if let cached = directory.cachedLegacySecret(appID: appID) {
            legacySecret = cached
        } else {
            legacySecret = try await store.legacyTokenSecret(appID: appID) ?? ""
            directory.remember(legacySecret: legacySecret, appID: appID)
        }
        return !legacySecret.isEmpty && legacySecret == settings.clientSecretRotation
    }

    /// Runs password hashing (PBKDF2, about 25 ms a password) on the gateway's compute pool;
    /// its full queue is Easemob's 503 with `Retry-After`.
    func hashing<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        do {
            return try await context.compute.run(work)
        } catch is ComputePool.Busy {
            throw EasemobError.busy
        }
    }

    func signingKey(appID: Int64) async throws -> [UInt8] {
        if let key = directory.cachedKey(appID: appID) { return key }
        let key = try await store.signingKey(appID: appID, sealer: context.secrets, now: clock.now)
        directory.remember(key: key, appID: appID)
        return key
    }
}
