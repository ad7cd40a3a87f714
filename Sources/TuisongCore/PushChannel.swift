import Synchronization

/// The push service a device's token belongs to, and so the transport a push to it leaves
/// through: an open name that a transport declares (`ChannelDeclaration`, registered by the
/// gateway's transport registry). The raw string is what the store keeps and the APIs speak.
/// Core names no service: each transport writes its name in its own folder, in its declaration.
public struct PushChannel: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
    public let rawValue: String

    /// Any well-formed channel name (`^[a-z][a-z0-9_-]{0,31}$`), declared or not: a stored row keeps
    /// its channel even when no transport of this build declares it. Whether a name is a
    /// transport of this build is `PushChannel.declared(_:)`.
    public init?(rawValue: String) {
        guard Self.isWellFormed(rawValue) else { return nil }
        self.rawValue = rawValue
    }

    /// A channel name this code spells out (a transport's constant); trapping on a malformed one.
    public init(_ name: StaticString) {
        let text = "\(name)"
        precondition(
            Self.isWellFormed(text), "\"\(text)\" is not a channel name (a-z, then up to 31 of a-z, 0-9, _, -)")
        rawValue = text
    }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let channel = PushChannel(rawValue: text) else {
            throw DecodingError.dataCorrupted(
                .init(codingPath: decoder.codingPath, debugDescription: "\"\(text)\" is not a channel name"))
        }
        self = channel
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }

    /// The channel of a skipped row naming no device when no declared channel takes bare tokens
    /// (`ChannelCatalog.unregisteredChannel`); no transport declares it.
    public static let unregistered = PushChannel("unregistered")

    /// The one channel-name rule, the same as both databases' `CHECK`s (SQLite's
    /// `Schema.channelShape`, PostgreSQL's `channel ~ '^[a-z][a-z0-9_-]{0,31}$'`): a lower-case
    /// letter, then up to 31 of `a-z 0-9 _ -`. A name Swift accepted and a database refused (or
    /// the other way round) would fail only when its first row was written.
    public static func isWellFormed(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (1...32).contains(bytes.count), isLowercaseLetter(bytes[0]) else { return false }
        return bytes.allSatisfy {
            isLowercaseLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9"))
                || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }

    private static func isLowercaseLetter(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z")
    }
}

/// What a transport declares about its channel for the rest of the gateway: its name for
/// people and what its tokens look like. (Every channel's devices have an environment,
/// `PushEnvironment`: it is the device's, not the service's.)
public struct ChannelDeclaration: Sendable {
    public var channel: PushChannel
    /// The service's name for people, as its maker writes it.
    public var displayName: String
    /// The same in Chinese, where the service has a Chinese name of its own (the console's
    /// Chinese pages); nil: `displayName` in both languages.
    public var displayNameZH: String?
    /// The service's name with its article, for messages ("an …" where the name is said with a vowel).
    public var withArticle: String
    /// What `DeviceToken(_:channel:)` accepts for it.
    public var tokenRule: DeviceToken.Rule
    /// How its entry of a message's per-service options (`PushOptions.services[name]`, the
    /// native API's object under its name) is checked; nil: it takes none.
    public var options: ServiceOptionsRule?
    /// Keys of the native API's shared `android` object that this service alone takes: each is
    /// read into its options entry under `key` and checked by its rule, so the API keeps the
    /// key while the gateway names no service.
    public var androidFields: [AndroidField]
    /// Whether a token given with no channel, which no device registered, is this channel's
    /// when its rule accepts it: the service whose tokens say by their shape whose they are
    /// (`ChannelCatalog.bareTokenChannel`). One channel at most takes them.
    public var takesBareTokens: Bool
    /// Whether its credentials each serve one environment (sandbox or production), so that a
    /// credential added or deleted releases the deliveries held in its environment
    /// (`ChannelCatalog.environmentChannels`) rather than all of the channel's.
    public var credentialsServeEnvironments: Bool
    /// Whether it is Android-style (`PushChannel.isAndroid`): opaque tokens, a credential per
    /// service, the native API's `android` options. A phone OS other than Android counts too.
    public var isAndroidStyle: Bool

    /// A key of the native API's `android` object (`name`) filling `key` of the service's entry.
    public struct AndroidField: Sendable, Hashable {
        public var name: String
        public var key: String

        public init(name: String, key: String) {
            self.name = name
            self.key = key
        }
    }

    public init(
        channel: PushChannel, displayName: String, displayNameZH: String? = nil, withArticle: String? = nil,
        tokenRule: DeviceToken.Rule = .opaque, options: ServiceOptionsRule? = nil, androidFields: [AndroidField] = [],
        takesBareTokens: Bool = false, credentialsServeEnvironments: Bool = false, isAndroidStyle: Bool = true
    ) {
        self.takesBareTokens = takesBareTokens
        self.credentialsServeEnvironments = credentialsServeEnvironments
        self.isAndroidStyle = isAndroidStyle
        self.options = options
        self.androidFields = androidFields
        self.channel = channel
        self.displayName = displayName
        self.displayNameZH = displayNameZH
        self.withArticle = withArticle ?? "a \(displayName)"
        self.tokenRule = tokenRule
    }

    /// What a name nobody declared is taken for: an Android-style service with opaque tokens.
    static func undeclared(_ channel: PushChannel) -> ChannelDeclaration {
        ChannelDeclaration(channel: channel, displayName: channel.rawValue)
    }
}

extension DeviceToken {
    /// How a service's tokens are checked and normalised.
    public struct Rule: Sendable {
        /// The token as stored, or nil when `raw` is not one of the service's.
        public let validate: @Sendable (String) -> String?
        /// What a token must be, for a refusal: "a … device token must be \(requirement)".
        public let requirement: String

        public init(
            requirement: String = Rule.opaqueRequirement, validate: @escaping @Sendable (String) -> String?
        ) {
            self.requirement = requirement
            self.validate = validate
        }

        /// Hex, even length, 64–200 characters, stored lower-case.
        public static let hex = Rule(requirement: "hexadecimal, an even number of 64–200 characters") {
            DeviceToken.normalisedHex($0)
        }

        /// What `opaque` asks, and what a rule says by default.
        public static let opaqueRequirement =
            "1–\(DeviceToken.maximumOpaqueLength) letters, digits or -_.:~"

        /// The Android services: 1–4,096 bytes of letters, digits and `-_.:~`, never
        /// `hex`-shaped (a client sending the wrong token, or the wrong channel).
        public static let opaque = Rule { raw in
            DeviceToken.isOpaqueToken(raw) && DeviceToken.normalisedHex(raw) == nil ? raw : nil
        }
    }
}

/// The channels this process knows, in declaration order: none until the gateway's transport
/// registry installs its declarations (`ChannelCatalog.install`; a test installs its own).
public final class ChannelCatalog: Sendable {
    public static let shared = ChannelCatalog()

    private struct State {
        var declarations: [ChannelDeclaration] = []
        var byChannel: [PushChannel: ChannelDeclaration] = [:]
        var order: [PushChannel: Int] = [:]
    }
    private let state = Mutex(State())

    /// Declares channels (a later declaration of a name replaces the earlier one in place). A
    /// list naming every channel declared so far (the gateway's registry) sets the order: its
    /// own. Otherwise a name new to the catalog goes before the next name of `declarations`
    /// already declared. So the order does not depend on which list was installed first: the
    /// standard registry installed after partial lists (a test's `[harmony]`, then APNs alone
    /// from a test kit, which would have put APNs after Harmony) is still the registry's order,
    /// and a partial list installed later moves nothing (tests share a process and run side by
    /// side, in no fixed order).
    public func install(_ declarations: [ChannelDeclaration]) {
        state.withLock { state in
            let listed = Set(declarations.map(\.channel))
            if state.declarations.allSatisfy({ listed.contains($0.channel) }) {
                var placed: [ChannelDeclaration] = []
                for declaration in declarations {
                    if let index = placed.firstIndex(where: { $0.channel == declaration.channel }) {
                        placed[index] = declaration
                    } else {
                        placed.append(declaration)
                    }
                }
                state.declarations = placed
                state.byChannel = Dictionary(placed.map { ($0.channel, $0) }, uniquingKeysWith: { $1 })
                state.order = Dictionary(placed.enumerated().map { ($1.channel, $0) }, uniquingKeysWith: { $1 })
                return
            }
            for (position, declaration) in declarations.enumerated() {
                if let index = state.order[declaration.channel] {
                    state.declarations[index] = declaration
                } else {
                    let order = state.order
                    let following = declarations[(position + 1)...].lazy.compactMap { order[$0.channel] }.first
                    state.declarations.insert(declaration, at: following ?? state.declarations.count)
                    for (index, placed) in state.declarations.enumerated() { state.order[placed.channel] = index }
                }
                state.byChannel[declaration.channel] = declaration
            }
        }
    }

    public var declarations: [ChannelDeclaration] { state.withLock { $0.declarations } }

    public func declaration(of channel: PushChannel) -> ChannelDeclaration? {
        state.withLock { $0.byChannel[channel] }
    }

    /// `ChannelDeclaration.isAndroidStyle` of `channel` (true for a channel nobody declared),
    /// without copying its declaration out: a policy asks it per device, and the copy retained
    /// and released every reference the declaration holds (its names, token rule, options).
    public func isAndroidStyle(_ channel: PushChannel) -> Bool {
        state.withLock { $0.byChannel[channel]?.isAndroidStyle } ?? true
    }

    /// The declared channel that takes bare tokens (`ChannelDeclaration.takesBareTokens`): the
    /// channel of a token given with no channel that no device registered, when its rule accepts
    /// the token. nil: no declared channel takes them, and such a token names no service.
    public var bareTokenChannel: ChannelDeclaration? {
        state.withLock { $0.declarations.first(where: \.takesBareTokens) }
    }

    /// The channel an audience entry that names no registered device is recorded under (a token
    /// no device registered, an unknown device id): the bare-token channel, whose rows these have
    /// always been; `PushChannel.unregistered` when no declared channel takes bare tokens. Such
    /// an entry is skipped `UnknownDevice` unless the bare-token channel's rule accepts its token.
    public var unregisteredChannel: PushChannel { bareTokenChannel?.channel ?? .unregistered }

    /// The declared channels whose credentials each serve one environment
    /// (`ChannelDeclaration.credentialsServeEnvironments`), in declaration order.
    public var environmentChannels: [PushChannel] {
        state.withLock { $0.declarations.filter(\.credentialsServeEnvironments).map(\.channel) }
    }
}

extension PushChannel {
    /// What its transport declared, or the undeclared default (Android-style, opaque tokens).
    public var declaration: ChannelDeclaration {
        ChannelCatalog.shared.declaration(of: self) ?? .undeclared(self)
    }

    /// The declared channel named `name`; nil when no transport of this build declares it.
    public static func declared(_ name: String) -> PushChannel? {
        PushChannel(rawValue: name).flatMap { ChannelCatalog.shared.declaration(of: $0)?.channel }
    }

    /// Every declared channel, in declaration order (the registry's).
    public static var allCases: [PushChannel] { ChannelCatalog.shared.declarations.map(\.channel) }

    /// Whether the channel is Android-style, as its transport declares
    /// (`ChannelDeclaration.isAndroidStyle`; a channel nobody declared is): opaque tokens, a
    /// credential per service, content rendered by its own transport; a phone OS other than
    /// Android counts too.
    public var isAndroid: Bool { ChannelCatalog.shared.isAndroidStyle(self) }

    /// The channel a token given with no channel is taken for when no device registered it and
    /// the channel's rule accepts it (`ChannelCatalog.bareTokenChannel`); nil when `token` is no
    /// such channel's.
    public static func takingBareToken(_ token: String) -> PushChannel? {
        guard let declaration = ChannelCatalog.shared.bareTokenChannel, declaration.tokenRule.validate(token) != nil
        else { return nil }
        return declaration.channel
    }

    /// The service's name for people, as its transport declares it.
    public var displayName: String { declaration.displayName }

    /// The service's name with its article, for messages, as its transport declares it.
    public var withArticle: String { declaration.withArticle }

    /// The declared Android-style services, in declaration order.
    public static var android: [PushChannel] { allCases.filter(\.isAndroid) }

    /// Channels as a list for a sentence, the one place help texts and messages take it from,
    /// so a new transport appears everywhere at once:
    /// `PushChannel.list(PushChannel.android, \.rawValue, "or")` is "a, b or c" for the declared
    /// Android-style channels a, b and c.
    public static func list(
        _ channels: [PushChannel]? = nil, _ name: (PushChannel) -> String = \.displayName,
        _ conjunction: String = "and"
    ) -> String {
        let names = (channels ?? allCases).map(name)
        guard let last = names.last else { return "" }
        return names.count == 1 ? last : names.dropLast().joined(separator: ", ") + " \(conjunction) " + last
    }
}

/// Whether channels are Android-style (`PushChannel.isAndroid`), asked of the catalog once per
/// run of equal channels: a policy deciding a page asks it per recipient, and a page's devices
/// are nearly always of one channel, so no lock or hash is taken per device.
public struct AndroidStyleMemo {
    private var last: (channel: PushChannel, isAndroid: Bool)?

    public init() {}

    public mutating func isAndroid(_ channel: PushChannel) -> Bool {
        if let last, last.channel == channel { return last.isAndroid }
        let isAndroid = channel.isAndroid
        last = (channel, isAndroid)
        return isAndroid
    }
}
