import Foundation
import Synchronization
import TuisongCore

/// The request headers of a push, as the message's options fix them: the same for every
/// device of a message, carried per push so a batch may mix messages (retries do).
public struct PushHeaders: Sendable, Hashable {
    public var pushType: PushType
    public var priority: PushPriority?
    /// When the service may stop trying; nil = the service's default.
    public var expiration: Date?
    public var collapseID: String?
    /// The message's Android settings (channels, importance, …), for the Android transports.
    public var android: AndroidOptions?
    /// The message's per-service options by channel name (`PushOptions.services`): each
    /// transport reads its own entry (`options(for:)`).
    public var services: [String: JSONValue]
    /// The message these pushes belong to: a transport names it in the fields the service
    /// returns in its delivery receipt (a tag or a callback param). nil in
    /// a push outside a message (a connection test).
    public var messageID: Int64?
    /// The app the message is of (the receipt tag's MAC is the app's).
    public var appID: Int64?

    public init(
        pushType: PushType = .alert, priority: PushPriority? = nil, expiration: Date? = nil, collapseID: String? = nil,
        android: AndroidOptions? = nil, services: [String: JSONValue] = [:]
    ) {
        self.android = android
        self.services = services
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
    }

    /// A message's headers.
    public init(_ options: PushOptions, messageID: Int64? = nil, appID: Int64? = nil) {
        self.init(
            pushType: options.pushType, priority: options.priority, expiration: options.expiration,
            collapseID: options.collapseID, android: options.android, services: options.services)
        self.messageID = messageID
        self.appID = appID
    }

    /// The message's options for `channel`'s transport alone, as its declared rule normalised
    /// them (or, for a row written before per-service options, as that row had them).
    public func options(for channel: PushChannel) -> JSONValue? { services[channel.rawValue] }
}

/// One push to one device: where it goes, through which credential, and what it carries.
public struct OutgoingPush: Sendable {
    /// The device's token on its push service.
    public var token: String
    /// The device's push service: the transport that sends it.
    public var channel: PushChannel
    /// The device's environment: a service with an endpoint per environment sends to that one,
    /// a service with a test message of its own marks a sandbox push as one, the others send as
    /// usual.
    public var environment: PushEnvironment
    /// The vendor credential selector the device registered with; nil = the app's default
    /// credential.
    public var selector: String?
    /// What the push says, shared by every push of a message that sends the message's own
    /// content (and by a policy's pushes of equal content): each transport renders its
    /// service's message from it.
    public var content: SharedContent
    public var headers: PushHeaders
    /// The device registered with the token, nil for a token no device registered: an app's own
    /// receipt token names its delivery by message and device (`AppReceiptTokens`).
    public var deviceID: Int64?

    public init(
        token: String, environment: PushEnvironment, selector: String? = nil, content: SharedContent,
        headers: PushHeaders, channel: PushChannel, deviceID: Int64? = nil
    ) {
        self.deviceID = deviceID
        self.token = token
        self.channel = channel
        self.environment = environment
        self.selector = selector
        self.content = content
        self.headers = headers
    }

    /// A push of content of its own.
    public init(
        token: String, environment: PushEnvironment, selector: String? = nil, content: PushContent,
        headers: PushHeaders, channel: PushChannel, deviceID: Int64? = nil
    ) {
        self.init(
            token: token, environment: environment, selector: selector, content: SharedContent(content),
            headers: headers, channel: channel, deviceID: deviceID)
    }
}

/// One content and its renderings: the pushes of a message share one, so a transport renders
/// its service's wire format once per message, not once per device (a one-payload transport
/// renders its bytes once and hands the same bytes to every request).
/// Two are equal when their content is (identity first: the common case is one instance).
public final class SharedContent: Sendable, Hashable {
    public let content: PushContent
    /// The bytes rendered so far, by the channel whose transport rendered them: nearly always
    /// one (a message's devices are mostly on one service), so a list, not a dictionary.
    private let renderings = Mutex<[(channel: PushChannel, bytes: [UInt8])]>([])

    public init(_ content: PushContent) {
        self.content = content
    }

    /// `channel`'s rendering of the content, rendered by `render` the first time a push of it
    /// asks and kept for the other pushes sharing the content.
    public func rendered(for channel: PushChannel, _ render: (PushContent) -> [UInt8]) -> [UInt8] {
        if let bytes = renderings.withLock({ $0.first { $0.channel == channel }?.bytes }) { return bytes }
        let bytes = render(content)
        renderings.withLock { list in
            if !list.contains(where: { $0.channel == channel }) { list.append((channel, bytes)) }
        }
        return bytes
    }

    public static func == (lhs: SharedContent, rhs: SharedContent) -> Bool {
        lhs === rhs || lhs.content == rhs.content
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(content) }
}

/// Pushes of one app, handed to a transport at once so it can resolve credentials and
/// connections once for all of them.
public struct PushBatch: Sendable {
    public var app: App
    public var pushes: [OutgoingPush]

    public init(app: App, pushes: [OutgoingPush]) {
        self.app = app
        self.pushes = pushes
    }
}

/// Why a push was not delivered. The engine stores and counts `description` (the string
/// operators see in statuses, delivery rows and metrics): the gateway's own reasons in
/// snake_case (`no_credential`), the services' own verbatim (`BadDeviceToken`, `UNREGISTERED`,
/// `80300007`). Rows stored by older builds, which spelled some of the gateway's reasons in
/// CamelCase (`NoCredential`), parse to the same cases.
public enum SendReason: Sendable, Hashable, CustomStringConvertible {
    /// The connection failed before an answer; the transport's error code.
    case transport(String)
    /// The service's own reason or code (`BadDeviceToken`, `UNREGISTERED`, a number),
    /// verbatim.
    case service(String)
    /// The app has no credential for the device's push service (for its environment, where
    /// the service's credentials have one):
    /// held until one is added or the message expires.
    case noCredential
    /// The device's credential selector names none of the app's credentials.
    case noCredentialForSelector
    /// The credential could not be read from the store (retried).
    case credentialLookupFailed
    /// The stored credential cannot be used (undecryptable, unparsable).
    case credentialUnusable
    /// The credential was refused earlier and is held until an operator fixes it.
    case credentialFailing
    /// The content, rendered for the device's service, exceeds the service's limit: failed
    /// where the service would answer so, skipped where its transport refuses it before any
    /// request.
    case payloadTooLarge
    /// A retried delivery whose message no longer exists.
    case messageGone
    /// The device's channel has no transport in this gateway.
    case channelNotConfigured
    /// The service's daily quota for the app is used up (a service with one): skipped until
    /// its next day rather than retried into the limit.
    case quota
    /// Content the device's service cannot carry (a background or data-only push to a service
    /// with no pass-through message): skipped, never sent as an invalid request.
    case unsupportedContent

    private static let gatewayReasons: [String: SendReason] = {
        let own: [SendReason] = [
            .noCredential, .noCredentialForSelector, .credentialLookupFailed, .credentialUnusable,
            .credentialFailing, .payloadTooLarge, .messageGone, .channelNotConfigured, .quota, .unsupportedContent,
        ]
        var byName = Dictionary(uniqueKeysWithValues: own.map { ($0.description, $0) })
        // Older builds' spellings, still in stored rows. (`PayloadTooLarge` is also a service's
        // own reason; a stored one is read as the gateway's, as older builds did.)
        let older: [String: SendReason] = [
            "NoCredential": .noCredential, "CredentialLookupFailed": .credentialLookupFailed,
            "CredentialUnusable": .credentialUnusable, "CredentialFailing": .credentialFailing,
            "PayloadTooLarge": .payloadTooLarge, "MessageGone": .messageGone,
            "ChannelNotConfigured": .channelNotConfigured,
        ]
        byName.merge(older) { current, _ in current }
        return byName
    }()

    /// Parses a stored reason: the gateway's own, else a service's, verbatim.
    public init(_ string: String) {
        if let own = Self.gatewayReasons[string] {
            self = own
        } else if string.hasPrefix("transport_"), string.count > "transport_".count {
            self = .transport(String(string.dropFirst("transport_".count)))
        } else if string.hasPrefix("Transport"), string.count > "Transport".count {
            self = .transport(Self.snakeCase(String(string.dropFirst("Transport".count))))
        } else {
            self = .service(string)
        }
    }

    public var description: String {
        switch self {
        case .transport(let code): "transport_\(Self.snakeCase(code))"
        case .service(let code): code
        case .noCredential: "no_credential"
        case .noCredentialForSelector: "no_credential_for_selector"
        case .credentialLookupFailed: "credential_lookup_failed"
        case .credentialUnusable: "credential_unusable"
        case .credentialFailing: "credential_failing"
        case .payloadTooLarge: "payload_too_large"
        case .messageGone: "message_gone"
        case .channelNotConfigured: "channel_not_configured"
        case .quota: "quota"
        case .unsupportedContent: "unsupported_content"
        }
    }

    /// `TimedOut` → `timed_out`; a code already in snake_case (or a number) is kept.
    static func snakeCase(_ code: String) -> String {
        var result = ""
        var previous: Character?
        for character in code {
            if character.isUppercase {
                if let previous, previous.isLowercase || previous.isNumber { result.append("_") }
                result.append(contentsOf: character.lowercased())
            } else {
                result.append(character)
            }
            previous = character
        }
        return result
    }
}

/// What happened when one device was tried.
public enum SendOutcome: Sendable, Hashable {
    /// The service took it; its own id of the message where it gives one (a response
    /// header's id, a message name, a request id, …).
    case delivered(serviceMessageID: String?)
    /// The service says the token is dead (410, BadDeviceToken); `since` is its timestamp.
    case invalidate(SendReason, since: Date?)
    /// Try again later (429, 5xx, connection trouble), after `after` if the service said.
    case retry(SendReason, after: Duration?)
    /// The app's credential is missing or failing: kept, visible, released when fixed.
    case held(SendReason)
    /// Not sent, by design rather than fault (no credential for the device's channel):
    /// recorded as skipped with the reason.
    case skipped(SendReason)
    case failed(SendReason)

    /// The reason, nil when delivered.
    public var reason: SendReason? {
        switch self {
        case .delivered: nil
        case .invalidate(let reason, _), .retry(let reason, _), .held(let reason), .skipped(let reason),
            .failed(let reason):
            reason
        }
    }
}

/// One push's outcome in a batch: `index` is its position in `PushBatch.pushes`.
public struct SendReport: Sendable, Hashable {
    public var index: Int
    public var outcome: SendOutcome

    public init(index: Int, outcome: SendOutcome) {
        self.index = index
        self.outcome = outcome
    }
}

/// The one seam between the delivery pipeline and a push service (one transport per
/// channel, `ChannelRouter`): a batch of pushes in, one outcome each out.
///
/// An implementer sends every push of `batch` through the credential its `selector` names
/// (nil: the app's default) in its `environment`, rendering its `content` in the service's wire
/// format (and checking the service's size limit) with its `headers`, and
/// calls `report` with outcomes by index until every push has had exactly one. `send` may
/// return before the answers arrive; `report` may be called from any thread, several times,
/// and must be cheap to call (a transport may call it on its event-loop thread). A push
/// that cannot be sent (no credential, a refused one) is reported at once, never dropped.
public protocol PushTransport: Sendable {
    func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async

    /// Gets ready to send the app's pushes of `environment` (nil: production): opens the
    /// connections a first push would otherwise wait for. Returns without waiting for them.
    func prepare(app: App, environment: PushEnvironment?) async

    /// Refuses, before a message is accepted, content its service could never carry for any
    /// device (throws `PayloadError`): the message is then not stored. The transport checks its
    /// limits again when it renders each push.
    func check(_ content: PushContent, options: PushOptions) throws
}

extension PushTransport {
    /// Nothing to open.
    public func prepare(app: App, environment: PushEnvironment?) async {}

    /// Nothing refused ahead.
    public func check(_ content: PushContent, options: PushOptions) throws {}

    /// Sends `batch` and waits for every outcome, in the order of `batch.pushes`.
    public func outcomes(of batch: PushBatch) async -> [SendOutcome] {
        guard !batch.pushes.isEmpty else { return [] }
        let collected = OutcomeCollector(count: batch.pushes.count)
        return await withCheckedContinuation { continuation in
            collected.onComplete(continuation)
            Task { await send(batch) { collected.add($0) } }
        }
    }
}

/// Gathers a batch's reports until each push has one.
private final class OutcomeCollector: Sendable {
    private struct State {
        var outcomes: [SendOutcome?]
        var missing: Int
        var continuation: CheckedContinuation<[SendOutcome], Never>?
    }
    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(outcomes: Array(repeating: nil, count: count), missing: count))
    }

    func onComplete(_ continuation: CheckedContinuation<[SendOutcome], Never>) {
        state.withLock { $0.continuation = continuation }
    }

    func add(_ reports: [SendReport]) {
        let finished = state.withLock { state -> (CheckedContinuation<[SendOutcome], Never>, [SendOutcome])? in
            for report in reports where state.outcomes[report.index] == nil {
                state.outcomes[report.index] = report.outcome
                state.missing -= 1
            }
            guard state.missing == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.outcomes.map { $0! })
        }
        if let (continuation, outcomes) = finished { continuation.resume(returning: outcomes) }
    }
}
