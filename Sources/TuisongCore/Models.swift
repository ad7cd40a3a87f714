import Foundation

/// The environment a device belongs to, whatever its channel: `sandbox` for a test phone
/// (an app built for development, a phone on a service's test list), `production` for the
/// rest. A push given an environment goes to that environment's devices only and counts the
/// others skipped (`AudienceEntry.otherEnvironment`). Each transport says what it means on
/// the wire: one service sends to the environment's endpoint, a service with a test message of its
/// own marks a sandbox delivery as one, the others send as usual.
public enum PushEnvironment: String, Sendable, Codable, CaseIterable, Hashable {
    case sandbox
    case production
}

/// An application registered with the gateway: one bundle id, one native API key, and the
/// vendor keys its app servers authenticate with.
public struct App: Sendable, Hashable, Codable {
    public var id: Int64
    public var name: String
    /// The iOS bundle id; the base of every topic an Apple device is pushed on.
    public var bundleID: String
    /// SHA-256 (hex) of the native API key. The key itself is shown once and never stored.
    public var apiKeyHash: String
    public var createdAt: Date
    public var updatedAt: Date
    /// Vendor settings, one JSON object per vendor name (a provider's `name`).
    /// Secret values inside are stored encrypted by the gateway before they reach the store.
    public var vendorSettings: [String: [String: String]]
    /// The app posts its own delivery receipts (`POST /api/v1/receipts`): each push carries a
    /// per-delivery receipt token for it to post back (docs/receipts.md, "The app's own receipts").
    public var appReceipts: Bool

    public init(
        id: Int64, name: String, bundleID: String, apiKeyHash: String, createdAt: Date,
        updatedAt: Date, vendorSettings: [String: [String: String]] = [:], appReceipts: Bool = false
    ) {
        self.appReceipts = appReceipts
        self.id = id
        self.name = name
        self.bundleID = bundleID
        self.apiKeyHash = apiKeyHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.vendorSettings = vendorSettings
    }
}

extension App {
    /// The app among `apps` (other than `excluding`) that people could not tell from one named
    /// `name` for `bundleID`: the same bundle id and the same name, ignoring case and spaces
    /// around it. Two such apps look alike in every list (the console's, `app list`) while
    /// their keys differ, so the admin API, the console and the CLI refuse the second one.
    public static func namesake(of name: String, bundleID: String, among apps: [App], excluding: Int64? = nil) -> App? {
        func key(_ text: String) -> String { text.trimmingCharacters(in: .whitespaces).lowercased() }
        return apps.first { app in
            app.id != excluding && key(app.bundleID) == key(bundleID) && key(app.name) == key(name)
        }
    }

    /// The one sentence refusing a namesake: which app holds the name, and what to do.
    public static func namesakeMessage(_ existing: App) -> String {
        "app \(existing.id) is already named \"\(existing.name)\" for \(existing.bundleID); "
            + "give this one a name people can tell apart (\"\(existing.name) staging\", say)"
    }
}

/// A device token as its push service knows it, checked by the rule its transport declares
/// (`ChannelDeclaration.tokenRule`): hex, even length, 64–200 characters, stored lower-case
/// (`Rule.hex`), or opaque: 1–4,096 bytes of the characters the services use (letters, digits
/// and `-_.:~`), safe in a URL path unescaped (`Rule.opaque`).
public struct DeviceToken: Sendable, Hashable, Codable, CustomStringConvertible {
    public let value: String

    /// Validates and normalises a bare token, one given with no channel, by the rule of the channel
    /// that takes them (`ChannelCatalog.bareTokenChannel`; a hex rule: `"ABCD…"` → `"abcd…"`);
    /// `nil` when it is not one of that channel's, or no channel takes them.
    public init?(_ raw: String) {
        guard let value = ChannelCatalog.shared.bareTokenChannel?.tokenRule.validate(raw) else { return nil }
        self.value = value
    }

    /// Validates a token of `channel` by the rule its transport declares (`ChannelDeclaration.tokenRule`);
    /// hex tokens are normalised to lower case.
    public init?(_ raw: String, channel: PushChannel) {
        guard let value = channel.declaration.tokenRule.validate(raw) else { return nil }
        self.value = value
    }

    /// A token naming an existing device, whatever its channel: a hex token (normalised) if it
    /// has that shape, else an opaque token as given.
    public init?(addressing raw: String) {
        guard let value = DeviceToken.Rule.hex.validate(raw) ?? DeviceToken.Rule.opaque.validate(raw) else {
            return nil
        }
        self.value = value
    }

    /// The hex spelling of a hex token (`value`; kept for the callers that only take hex tokens).
    public var hex: String { value }

    public var description: String { value }

    /// The most bytes an opaque token may have: the services' run to some 160 today; 4 KB
    /// leaves room for a service that lengthens them without admitting a blob.
    public static let maximumOpaqueLength = 4096

    static func normalisedHex(_ raw: String) -> String? {
        let count = raw.utf8.count
        guard count >= 64, count <= 200, count % 2 == 0 else { return nil }
        var lowered = [UInt8]()
        lowered.reserveCapacity(count)
        for byte in raw.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"):
                lowered.append(byte)
            case UInt8(ascii: "A")...UInt8(ascii: "F"):
                lowered.append(byte + 32)
            default:
                return nil
            }
        }
        return String(decoding: lowered, as: UTF8.self)
    }

    static func isOpaqueToken(_ raw: String) -> Bool {
        let count = raw.utf8.count
        guard count >= 1, count <= maximumOpaqueLength else { return false }
        return raw.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: ":"), UInt8(ascii: "~"):
                true
            default: false
            }
        }
    }
}

/// A tag name: 1–128 characters of letters, digits, CJK ideographs and `_ - . @ ! # $ & * + = | ￥`
/// (`TagName.rule`, the words every API's refusal uses).
public struct TagName: Sendable, Hashable, Codable, CustomStringConvertible {
    public let value: String

    public init?(_ raw: String) {
        let count = raw.count
        guard count >= 1, count <= 128 else { return nil }
        for scalar in raw.unicodeScalars where !TagName.isAllowed(scalar) { return nil }
        value = raw
    }

    static func isAllowed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true  // ASCII digits and letters
        case 0x5F, 0x2D, 0x2E: return true  // _ - .
        // JPush's tags may also hold @ ! # $ & * + = | and the full-width yuan sign ￥; every
        // vendor's tags are the core's, so the core takes the widest documented set. None of
        // these separates a list (`,` `;` and spaces stay out) and all are bound, never spliced.
        case 0x40, 0x21, 0x23, 0x24, 0x26, 0x2A, 0x2B, 0x3D, 0x7C, 0xFFE5: return true
        case 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xF900...0xFAFF, 0x20000...0x2FA1F:
            return true  // CJK unified ideographs, extensions, compatibility
        case 0x3040...0x30FF, 0xAC00...0xD7AF: return true  // kana, hangul
        default:
            // Other letters (accented Latin, Cyrillic, …) are letters too.
            return scalar.value > 0x7F && scalar.properties.isAlphabetic
        }
    }

    public var description: String { value }

    /// The rule in words, for refusals: "1–128 letters, digits, CJK characters or …".
    public static let rule = "1–128 letters, digits, CJK characters or _ - . @ ! # $ & * + = | ￥"
}

/// A registered device: one push token of one app, on the channel the token belongs to.
public struct Device: Sendable, Hashable, Codable {
    public var id: Int64
    public var appID: Int64
    public var token: String
    /// Sandbox for a test phone of any channel; production for the rest (and for every
    /// Android-style device registered before devices of every channel had one).
    public var environment: PushEnvironment
    /// The app's own user identifier for this device, if it gave one.
    public var user: String?
    public var locale: String?
    /// The IM account (an app-scoped user id of an IM vendor) bound to this device.
    public var imAccount: String?
    public var createdAt: Date
    public var updatedAt: Date
    /// Set when its service reported the token gone; such a device receives no more pushes
    /// until it registers again.
    public var invalidatedAt: Date?
    public var invalidReason: String?
    /// The vendor credential selector the device registered with (a vendor's
    /// certificate id or name); delivery uses the app's credential carrying the same selector.
    public var credentialSelector: String?
    public var channel: PushChannel

    public init(
        id: Int64, appID: Int64, token: String, environment: PushEnvironment, user: String? = nil,
        locale: String? = nil, imAccount: String? = nil, createdAt: Date, updatedAt: Date, invalidatedAt: Date? = nil,
        invalidReason: String? = nil, credentialSelector: String? = nil, channel: PushChannel
    ) {
        self.channel = channel
        self.id = id
        self.appID = appID
        self.token = token
        self.environment = environment
        self.user = user
        self.locale = locale
        self.imAccount = imAccount
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.invalidatedAt = invalidatedAt
        self.invalidReason = invalidReason
        self.credentialSelector = credentialSelector
    }
}

/// What a client sends to register or update a device. `nil` fields are left unchanged on
/// an update; `tags`, when given, replaces the device's tag set.
public struct DeviceRegistration: Sendable, Hashable {
    public var token: DeviceToken
    public var environment: PushEnvironment
    /// The device's user; nil = unchanged, `DeviceRegistration.noUser` = detach it.
    public var user: String?
    public var locale: String?
    public var tags: [TagName]?
    /// The vendor credential selector (a vendor's certificate id or name); nil = unchanged.
    public var credentialSelector: String?
    /// The token's service. A token is one device of an app whatever its channel: registering
    /// it again with another channel moves it (tokens of different services never coincide).
    public var channel: PushChannel

    public init(
        token: DeviceToken, environment: PushEnvironment, user: String? = nil,
        locale: String? = nil, tags: [TagName]? = nil, credentialSelector: String? = nil,
        channel: PushChannel
    ) {
        self.channel = channel
        self.token = token
        self.environment = environment
        self.user = user
        self.locale = locale
        self.tags = tags
        self.credentialSelector = credentialSelector
    }
}

extension DeviceRegistration {
    /// The `user` that detaches the device's user (a logout: one person's pushes must stop
    /// reaching a phone someone else now uses). Never a user name: the APIs refuse an empty
    /// one; the store's upsert clears the column for it and reads a stored one as none.
    public static let noUser = ""
}

/// One page of a keyset-paginated listing. `nextCursor` is `nil` on the last page.
public struct Page<Element: Sendable>: Sendable {
    public var items: [Element]
    public var nextCursor: String?

    public init(items: [Element], nextCursor: String?) {
        self.items = items
        self.nextCursor = nextCursor
    }
}

/// iOS bundle identifiers: reverse-DNS of letters, digits and `-`, at most 155 characters.
public enum BundleID {
    public static func isValid(_ raw: String) -> Bool {
        guard !raw.isEmpty, raw.utf8.count <= 155, !raw.hasPrefix("."), !raw.hasSuffix("."),
            !raw.contains("..")
        else { return false }
        return raw.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."):
                true
            default: false
            }
        }
    }
}
