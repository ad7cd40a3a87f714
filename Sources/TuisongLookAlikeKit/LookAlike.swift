import Foundation
import Logging
import Synchronization
import TuisongCore
internal import TuisongCrypto

/// A service's look-alike, declared from its transport's folder
/// (`Sources/Transports/<Name>/LookAlike`) and listed once in a `LookAlikeRegistry`: the local
/// set-up, local mode, the CLI's look-alike command and the tests go through the registry and
/// never name a service.
///
///     public static let declaration = LookAlikeDeclaration(
///         service: .example, summary: "Example Push (POST /example/v1/send)",
///         configurationKeys: [("exampleApps", #"{"appKey","appSecret"}"#)], setupKeys: ["exampleApp"],
///         makeSetup: { setup in … }, configure: { configuration, setup in … },
///         start: { host, configuration in ExampleLookAlike(host: host, configuration: configuration) },
///         fallbackCredential: { setup, baseURL in … }, banner: { setup, baseURL, filePrefix in … })
public struct LookAlikeDeclaration: Sendable {
    /// The channel of the transport it stands in for.
    public var service: AndroidPushService
    /// What it serves, for the look-alike command's help: the service and its paths.
    public var summary: String
    /// The `LookAlikeConfiguration` keys holding what it trusts, each with its JSON shape (the
    /// look-alike command's `--config` file's).
    public var configurationKeys: [(key: String, shape: String)]
    /// The keys of its throwaway credentials in a saved local set-up.
    public var setupKeys: [String]
    /// The port's default: it answers the requests no look-alike claims
    /// (`PortService.respondUnclaimed`), and its banner entries and counts are the look-alike
    /// command's top level rather than an entry of their own (scripts read them there).
    public var isPortDefault: Bool
    /// The names operators' configs and scripts know the look-alikes by, when it is the port's
    /// default (`LookAlikeRegistry.legacyNames`); nil for the others.
    public var legacyNames: LookAlikeLegacyNames?
    /// Adds its magic token prefixes to local mode's faults (`Faults.magicTokenPrefixes`), when
    /// it has faults of its own; the token-based look-alikes share the kit's.
    public var magicFaults: (@Sendable (inout LookAlikeConfiguration.Faults) -> Void)?
    /// Makes its throwaway credentials into a set-up (a fresh one, or one saved before it had them).
    public var makeSetup: @Sendable (inout LookAlikeLocalSetup) throws -> Void
    /// Trusts the set-up's credentials in a configuration made from it.
    public var configure: @Sendable (inout LookAlikeConfiguration, LookAlikeLocalSetup) -> Void
    /// How it starts: its service on the shared port, trusting what `configuration` lists
    /// (throws for a configuration whose keys it cannot read).
    package var start: @Sendable (LookAlikeHost, LookAlikeConfiguration) throws -> any PortService
    /// Local mode: its own credential, every app's fallback (its token endpoint at `baseURL`
    /// where the credential names one).
    public var fallbackCredential: @Sendable (LookAlikeLocalSetup, _ baseURL: String) -> LookAlikeCredential
    /// Its entry in the look-alike command's banner: URLs and credentials; a key file a client loads is
    /// written at `filePrefix` + its own name (`filePrefix` is the set-up's directory, the
    /// command's name and a dash, so every file the command writes carries its name).
    public var banner: @Sendable (LookAlikeLocalSetup, _ baseURL: String, _ filePrefix: String) throws -> [String: Any]

    package init(
        service: AndroidPushService, summary: String, configurationKeys: [(key: String, shape: String)],
        setupKeys: [String], isPortDefault: Bool = false, legacyNames: LookAlikeLegacyNames? = nil,
        makeSetup: @escaping @Sendable (inout LookAlikeLocalSetup) throws -> Void,
        configure: @escaping @Sendable (inout LookAlikeConfiguration, LookAlikeLocalSetup) -> Void,
        start: @escaping @Sendable (LookAlikeHost, LookAlikeConfiguration) throws -> any PortService,
        fallbackCredential: @escaping @Sendable (LookAlikeLocalSetup, _ baseURL: String) -> LookAlikeCredential,
        banner:
            @escaping @Sendable (LookAlikeLocalSetup, _ baseURL: String, _ directory: String) throws -> [String: Any],
        magicFaults: (@Sendable (inout LookAlikeConfiguration.Faults) -> Void)? = nil
    ) {
        self.service = service
        self.summary = summary
        self.configurationKeys = configurationKeys
        self.setupKeys = setupKeys
        self.isPortDefault = isPortDefault
        self.legacyNames = legacyNames
        self.magicFaults = magicFaults
        self.makeSetup = makeSetup
        self.configure = configure
        self.start = start
        self.fallbackCredential = fallbackCredential
        self.banner = banner
    }
}

/// The names the look-alikes have been known by since the port's default look-alike was the
/// only one, which operators' configs and scripts use: the look-alike command
/// (`tuisong <command>`), which also begins the names of the files it and local mode keep
/// (`<command>-local.json`, `<command>-ca.pem`…), and the config section holding local mode's
/// keys (`<section>.local_mock`, `<section>.local_mock_port`). The port's default declares them.
public struct LookAlikeLegacyNames: Sendable, Equatable {
    public var command: String
    public var localModeSection: String

    public init(command: String, localModeSection: String) {
        self.command = command
        self.localModeSection = localModeSection
    }
}

/// A look-alike's own credential in the shape the gateway stores a channel credential.
public struct LookAlikeCredential: Sendable, Equatable {
    public var vendorAppID: String
    public var clientID: String
    public var secret: [UInt8]
    /// The credential's options (a receipt id).
    public var options: [String: String]

    public init(vendorAppID: String, clientID: String, secret: [UInt8], options: [String: String] = [:]) {
        self.vendorAppID = vendorAppID
        self.clientID = clientID
        self.secret = secret
        self.options = options
    }
}

/// The look-alikes a server runs, in order: `LookAlikeRegistry.standard` (the `TuisongLookAlikes`
/// module: one line per transport's look-alike), or with one more a test adds.
public struct LookAlikeRegistry: Sendable {
    public let declarations: [LookAlikeDeclaration]

    public init(_ declarations: [LookAlikeDeclaration]) {
        self.declarations = declarations
    }

    /// This registry and `declaration` (replacing one of the same service).
    public func adding(_ declaration: LookAlikeDeclaration) -> LookAlikeRegistry {
        LookAlikeRegistry(declarations.filter { $0.service != declaration.service } + [declaration])
    }

    public subscript(service: AndroidPushService) -> LookAlikeDeclaration? {
        declarations.first { $0.service == service }
    }

    public var services: [AndroidPushService] { declarations.map(\.service) }

    /// The names the port's default look-alike declares (`LookAlikeDeclaration.legacyNames`):
    /// the look-alike command, its files' prefix and local mode's config section. A registry
    /// without one is known by neutral names.
    public var legacyNames: LookAlikeLegacyNames {
        declarations.first(where: \.isPortDefault)?.legacyNames
            ?? LookAlikeLegacyNames(command: "look-alikes", localModeSection: "local_mode")
    }

    /// Reads every look-alike's keys and faults of `configuration`, as starting a server
    /// would: a file whose keys do not read is refused before anything starts.
    public func check(_ configuration: LookAlikeConfiguration) throws {
        let host = LookAlikeHost(configuration: configuration)
        for declaration in declarations {
            _ = try declaration.start(host, configuration).prepareFaults(configuration.faults)
        }
    }
}

/// A token-based service's look-alike on the shared port (a sign-in issuing access tokens, sends
/// that present them), made by its declaration's `start`. Stateless per request apart from what
/// it trusts and the host's token store and recorder, so every event loop calls it directly.
/// Its answers are counted and logged here, and raise the connection's stream limit (these
/// services do not hold a new connection to one stream).
package protocol LookAlikeService: PortService {
    /// What the services on the port share.
    var host: LookAlikeHost { get }
    /// The answer to `request` when its path is one of this service's; nil when it is not.
    func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse?
    /// The receipts an accepted push asks for, shaped and signed as the service sends them; nil
    /// when it asks for none (or the service sends none).
    func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan?
}

extension LookAlikeService {
    package func receipts(for message: ReceivedAndroidMessage) -> LookAlikeReceiptPlan? { nil }

    package func respond(to request: LookAlikeRequest, call: PortCall) -> LookAlikeAnswer? {
        guard let answer = answer(request, faults: call.faults.androidPrefixes) else { return nil }
        host.recorder.count(answer)
        if let log = host.requestLog {
            log(
                RequestLogLine.make(
                    android: answer, method: request.method, path: request.path, connectionID: request.connectionID,
                    streamID: request.streamID, receivedAt: request.receivedAtMilliseconds,
                    payloadBytes: request.bodyLength))
        }
        return LookAlikeAnswer(
            status: answer.status, headers: answer.headers, body: answer.body, raisesStreamLimit: true,
            endlessUnderFault: true)
    }

    /// The counters the CLI's look-alike command prints for it when it stops.
    package func statisticsSummary() -> [String: Int] {
        let counts = host.recorder.statistics[service]
        return [
            "token_grants": counts.tokenGrants, "token_refusals": counts.tokenRefusals,
            "send_requests": counts.sendRequests, "messages_delivered": counts.messagesDelivered,
            "messages_refused": counts.messagesRefused,
        ]
    }

    /// How the bearer token of a send request stands, for a service whose token endpoint issued
    /// it for `appID`.
    package func authenticateBearer(_ request: LookAlikeRequest, appID: String) -> BearerAuthentication {
        guard let bearer = Self.bearerToken(request.authorization) else { return .refused }
        switch tokens.lookup(bearer, nowMilliseconds: request.receivedAtMilliseconds) {
        case .unknown: return .refused
        case .expired(let issued): return issued.service == service ? .expired : .refused
        case .valid(let issued):
            return issued.service == service && issued.target == appID ? .accepted(issued) : .refused
        }
    }

    package var recorder: AndroidRecorder { host.recorder }
    package var tokens: AccessTokenStore { host.tokens }
    package var lifetimeSeconds: Int { host.lifetimeSeconds }

    /// Issues an access token of this service for `lifetimeSeconds`, starting `prefix`.
    package func issueToken(
        prefix: String, principal: String, target: String, scopes: [String] = [], nowMilliseconds: Int64
    ) -> String {
        tokens.issue(
            .init(
                service: service, principal: principal, target: target, scopes: scopes,
                expiresAtMilliseconds: nowMilliseconds + Int64(lifetimeSeconds) * 1000), prefix: prefix)
    }

    /// Records an accepted push and, when a sink is set, sends its receipts in the background
    /// (a real service sends them later than its answer, too).
    package func acceptedPush(_ message: ReceivedAndroidMessage) {
        host.recorder.record(message)
        guard let sink = host.receiptSink.withLock({ $0 }), let plan = receipts(for: message) else { return }
        switch plan {
        case .direct(let posts):
            guard !posts.isEmpty else { return }
            Task { for post in posts { await sink.post(post) } }
        case .configured(let tag, let make):
            Task {
                guard let configuration = await sink.configuration(service: message.service, tag: tag) else {
                    return
                }
                for post in make(configuration) { await sink.post(post) }
            }
        }
    }

    /// Request bodies are kept up to this size (1000 tokens of a few hundred bytes fit easily);
    /// larger ones are answered "too large" by the service concerned.
    package static var bodyStorageLimit: Int { LookAlikeHost.bodyStorageLimit }
    /// The most tokens a batch service takes in one request.
    package static var maximumBatchTokens: Int { 1000 }

    /// The bearer token of an `authorization` header ("Bearer x", any case of "bearer").
    package static func bearerToken(_ authorization: String?) -> String? {
        guard let authorization, authorization.utf8.count > 7 else { return nil }
        let scheme = authorization.prefix(7)
        guard scheme.lowercased() == "bearer " else { return nil }
        let token = authorization.dropFirst(7).trimmingSpaces()
        return token.isEmpty ? nil : token
    }

    /// A fresh request id of 24 digits, milliseconds first.
    package static func requestID(nowMilliseconds: Int64) -> String {
        var generator = SystemRandomNumberGenerator()
        let tail = (0..<11).map { _ in String(Int.random(in: 0...9, using: &generator)) }.joined()
        return String(nowMilliseconds) + tail
    }

    /// Device tokens are opaque, but no real one is empty, longer than 4 KB or holds anything
    /// outside URL-safe base64 and `:` `.` `-` (spaces are the classic copy-paste bug).
    package static func isPlausibleDeviceToken(_ token: String) -> Bool {
        guard !token.isEmpty, token.utf8.count <= 4096 else { return false }
        return token.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"),
                UInt8(ascii: "."), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="):
                true
            default: false
            }
        }
    }

    /// Splits a batch's tokens by outcome, or finds the request-level fault that fails it whole.
    package static func sortBatch(_ tokens: [String], faults: AndroidTokenPrefixFaults) -> LookAlikeBatchOutcome {
        var outcome = LookAlikeBatchOutcome()
        for token in tokens {
            guard isPlausibleDeviceToken(token) else {
                outcome.illegal.append(token)
                continue
            }
            switch faults.fault(forToken: token)?.kind {
            case nil: outcome.accepted.append(token)
            case .unregistered:
                outcome.illegal.append(token)
                outcome.expired.append(token)
            case .invalidArgument: outcome.illegal.append(token)
            case .quotaExceeded, .unavailable, .internal:
                if outcome.requestFault == nil { outcome.requestFault = faults.fault(forToken: token) }
            }
        }
        return outcome
    }

    /// Token strings of a `token` member: nil when it is not an array of strings.
    package static func tokenList(_ value: MockJSON?) -> [String]? {
        guard case .array(let elements) = value else { return nil }
        var tokens: [String] = []
        tokens.reserveCapacity(elements.count)
        for element in elements {
            guard let token = element.stringValue else { return nil }
            tokens.append(token)
        }
        return tokens
    }

    /// Payload bytes of a batch request: the body without its tokens.
    package static func payloadBytes(bodyLength: Int, tokens: [String]) -> Int {
        bodyLength - tokens.reduce(0) { $0 + $1.utf8.count + 3 }
    }

    /// `count` random characters of `alphabet`.
    package static func randomString(count: Int, alphabet: String) -> String {
        LookAlikeLocalSetup.randomString(count: count, alphabet: alphabet)
    }
}

/// How the bearer token of a send request stands.
package enum BearerAuthentication {
    case accepted(AccessTokenStore.Issued)
    /// Missing, unknown, another service's, or another app's token.
    case refused
    /// Expired or revoked.
    case expired
}

/// The tokens of a batch split by outcome, or the request-level fault that fails it whole.
package struct LookAlikeBatchOutcome {
    package var accepted: [String] = []
    /// Malformed, or faulted `unregistered` / `invalidArgument`.
    package var illegal: [String] = []
    /// Faulted `unregistered` (a service that reports expired tokens apart lists these).
    package var expired: [String] = []
    package var requestFault: LookAlikeConfiguration.AndroidTokenFault?
}

/// What the look-alikes on one port share: issued access tokens, the recorder, where receipts
/// go, the request log.
public final class LookAlikeHost: Sendable {
    /// Request bodies are kept up to this size, unless a service keeps less on its paths
    /// (`PortService.bodyStorageLimits`).
    package static let bodyStorageLimit = 4 * 1024 * 1024

    package let lifetimeSeconds: Int
    package let tokens = AccessTokenStore()
    package let recorder: AndroidRecorder
    /// Where accepted pushes' receipts go (`LookAlikeServer.sendReceipts(to:)`); nil: none sent.
    package let receiptSink = Mutex<(any LookAlikeReceiptSink)?>(nil)
    /// Receives one JSON line per request when `logRequests` is on; nil when it is off. Called on
    /// event-loop threads.
    package let requestLog: (@Sendable (String) -> Void)?
    /// The server's logger.
    package let logger: Logger

    package init(
        configuration: LookAlikeConfiguration, requestLog: (@Sendable (String) -> Void)? = nil,
        logger: Logger = Logger(label: "tuisong.look-alikes")
    ) {
        lifetimeSeconds = max(0, configuration.accessTokenLifetimeSeconds)
        recorder = AndroidRecorder(capacity: configuration.recordedNotificationLimit)
        self.requestLog = requestLog
        self.logger = logger
    }
}

/// The services a server started from its registry, asked in order for each request.
final class LookAlikeSet: Sendable {
    let services: [any PortService]
    /// Every service's `bodyStorageLimits`, read once.
    let bodyStorageLimits: [(pathPrefix: String, bytes: Int)]

    init(_ registry: LookAlikeRegistry, host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        services = try registry.declarations.map { try $0.start(host, configuration) }
        bodyStorageLimits = services.flatMap(\.bodyStorageLimits)
    }

    func service(_ service: AndroidPushService) -> (any PortService)? {
        services.first { $0.service == service }
    }

    /// How much of a body sent to `path` is kept.
    func bodyStorageLimit(path: String?) -> Int {
        if let path, let limit = bodyStorageLimits.first(where: { path.hasPrefix($0.pathPrefix) }) {
            return limit.bytes
        }
        return LookAlikeHost.bodyStorageLimit
    }

    /// The answer of the service whose path `request` names, else of the one that answers the
    /// paths no service claims; nil when there is none.
    func answer(
        _ request: LookAlikeRequest, faults: ActiveFaults, connectionStates: [AnyObject?]
    ) -> LookAlikeAnswer? {
        for index in services.indices {
            let call = PortCall(
                faults: faults, preparedFaults: faults.prepared[index], connectionState: connectionStates[index])
            if let answer = services[index].respond(to: request, call: call) { return answer }
        }
        for index in services.indices {
            let call = PortCall(
                faults: faults, preparedFaults: faults.prepared[index], connectionState: connectionStates[index])
            if let answer = services[index].respondUnclaimed(to: request, call: call) { return answer }
        }
        return nil
    }
}

extension JSONValue {
    /// `value` as stored JSON: a look-alike's own settings or material, which the kit keeps
    /// without knowing their shape and the look-alike reads back in its own types.
    package init(encoding value: some Encodable) throws {
        self = try JSONDecoder().decode(JSONValue.self, from: JSONEncoder().encode(value))
    }

    /// This value read as `type`.
    package func decoded<T: Decodable>(as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: JSONEncoder().encode(self))
    }
}

/// A key of a keyed container spelled at run time (a look-alike's key in a configuration or a set-up).
struct AnyCodingKey: CodingKey {
    var stringValue: String
    var intValue: Int? { nil }
    init(_ string: String) { stringValue = string }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

extension Substring {
    fileprivate func trimmingSpaces() -> String {
        var slice = self[...]
        while slice.first == " " { slice = slice.dropFirst() }
        while slice.last == " " { slice = slice.dropLast() }
        return String(slice)
    }
}

/// A look-alike cannot read a credential it is taught, or write a file it hands out.
public struct LocalLookAlikeError: Error, CustomStringConvertible {
    public var description: String
    package init(_ description: String) { self.description = description }
}
