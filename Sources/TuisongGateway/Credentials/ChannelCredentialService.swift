import Foundation
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

/// A credential of a channel with a declared form to add: its channel and the fields of the form its
/// transport declares, by name (what the admin API, the console and the CLI build).
public struct ChannelCredentialUpload: Sendable {
    public let channel: PushChannel
    public let input: CredentialFormInput

    public init(channel: PushChannel, input: CredentialFormInput) {
        self.channel = channel
        self.input = input
    }

    public static func form(channel: PushChannel, _ input: CredentialFormInput) -> Self {
        Self(channel: channel, input: input)
    }
}

/// Validates channel credentials by their transport's declared form, seals their secrets under
/// the master key, and opens them for the transports. The console, the CLI and local mode add
/// credentials through here.
public struct ChannelCredentialService: Sendable, ChannelSecretOpener {
    let store: any ChannelCredentialStore
    let masterKey: MasterKey
    /// Hosts besides Google's where a service account's `token_uri` may point: the look-alikes
    /// the operator's config names (`testTokenHosts(_:)`).
    let testTokenHosts: Set<String>
    let registry: TransportRegistry

    public init(
        store: any ChannelCredentialStore, masterKey: MasterKey, testTokenHosts: Set<String> = [],
        registry: TransportRegistry = .standard
    ) {
        self.store = store
        self.masterKey = masterKey
        self.testTokenHosts = Set(testTokenHosts.map { $0.lowercased() })
        self.registry = registry
    }

    /// The hosts the operator's config allows a credential's sign-in on besides its service's
    /// own: those each transport's section points at elsewhere (its declared `testTokenHosts`: a
    /// look-alike, as the tests and local mode run one), and loopback in local mode,
    /// where every token request goes to the bundled look-alike whatever the account says.
    public static func testTokenHosts(_ config: GatewayConfig) -> Set<String> {
        var hosts: Set<String> = []
        for declaration in config.transports.registry.declarations {
            guard let configured = declaration.testTokenHosts else { continue }
            hosts.formUnion(configured(config.transports.section(declaration.channel.channel)))
        }
        if config.localMode.enabled { hosts.formUnion(["127.0.0.1", "localhost", "::1", "[::1]"]) }
        return hosts
    }

    /// Checks an upload by its channel's declared form (`CredentialForm.validate`: a key file
    /// that loads, ids in the shapes the service gives them, …).
    public func inspect(_ upload: ChannelCredentialUpload, appID: Int64, selector: String?) throws(CredentialError)
        -> NewChannelCredential
    {
        let selector = try CredentialSelector.validated(selector)
        let channel = upload.channel
        guard let form = registry.declaration(of: channel)?.credentialForm else {
            throw CredentialError(
                .wrongKind,
                channel == registry.uploadedFilesChannel
                    ? "\(channel.displayName) credentials are .p8, .p12 or PEM files (credential add --channel \(channel.rawValue))"
                    : "\(channel.rawValue) has no credential form: use \(registry.formChannelList)",
                field: "channel")
        }
        let valid: ValidatedCredential
        do {
            valid = try form.validate(upload.input, CredentialFormContext(testTokenHosts: testTokenHosts))
        } catch {
            throw CredentialError(
                CredentialError.Code(rawValue: error.code), error.message, field: error.field, text: error.text)
        }
        return NewChannelCredential(
            appID: appID, channel: channel, selector: selector, vendorAppID: valid.vendorAppID,
            clientID: valid.clientID, encryptedSecret: try seal(valid.secret, appID: appID, channel: channel),
            options: valid.options)
    }

    public func add(_ upload: ChannelCredentialUpload, appID: Int64, selector: String? = nil) async throws
        -> ChannelCredentialRecord
    {
        try await addOnce(upload, appID: appID, selector: selector).record
    }

    /// As `add`, saying whether it was added: a repeat of an upload already stored (the same
    /// app, channel, selector, identifiers, options and secret, by their keyed digest) adds
    /// nothing and answers the stored one, `added: false`.
    public func addOnce(_ upload: ChannelCredentialUpload, appID: Int64, selector: String? = nil) async throws
        -> (record: ChannelCredentialRecord, added: Bool)
    {
        var checked = try inspect(upload, appID: appID, selector: selector)
        let secret = try secret(sealed: checked.encryptedSecret, appID: appID, channel: checked.channel)
        let digest = CredentialDigest.hex(
            [
                Array("channel".utf8), Array(String(appID).utf8), Array(checked.channel.rawValue.utf8),
                Array((checked.selector ?? "").utf8), Array(checked.vendorAppID.utf8), Array(checked.clientID.utf8),
                Array(
                    checked.options.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: "\n")
                        .utf8),
                secret,
            ], key: masterKey.box.derivedKey("credential digest"))
        checked.secretDigest = digest
        if let existing = try await store.channelCredential(appID: appID, secretDigest: digest) {
            return (existing, false)
        }
        let record = try await store.addChannelCredential(checked)
        return (record, record.encryptedSecret == checked.encryptedSecret)
    }

    private func secret(sealed: [UInt8], appID: Int64, channel: PushChannel) throws -> [UInt8] {
        try masterKey.box.open(sealed, associatedData: Self.associatedData(appID, channel))
    }

    public func secret(of record: ChannelCredentialRecord) throws -> [UInt8] {
        try masterKey.box.open(
            record.encryptedSecret, associatedData: Self.associatedData(record.appID, record.channel))
    }

    private func seal(_ secret: [UInt8], appID: Int64, channel: PushChannel) throws(CredentialError) -> [UInt8] {
        do {
            return try masterKey.box.seal(secret, associatedData: Self.associatedData(appID, channel))
        } catch {
            throw CredentialError(.corruptFile, "cannot seal the credential: \(error)")
        }
    }

    /// Binds a sealed secret to its app and service: a row copied elsewhere does not decrypt.
    static func associatedData(_ appID: Int64, _ channel: PushChannel) -> [UInt8] {
        Array("tuisong-channel-credential-v1:\(appID):\(channel.rawValue)".utf8)
    }
}

/// How APIs and the CLI show an Android credential: never its secret.
public enum ChannelCredentialView {
    public static func object(_ r: ChannelCredentialRecord) -> [String: Any] {
        var object: [String: Any] = [
            "id": r.id, "app_id": r.appID, "channel": r.channel.rawValue, "vendor_app_id": r.vendorAppID,
            "client_id": r.clientID, "status": r.status, "created_at": ISO8601.string(r.createdAt),
        ]
        object["selector"] = r.selector.map { $0 as Any } ?? NSNull()
        object["status_reason"] = r.statusReason.map { $0 as Any } ?? NSNull()
        object["badge_class"] = r.options["badge_class"].map { $0 as Any } ?? NSNull()
        // A service's receipt id, where its form has one (`CredentialForm.appClient(receiptID:)`).
        if let receiptID = r.options["receipt_id"] { object["receipt_id"] = receiptID }
        // A receipt switch, where its form has one (`CredentialForm.appClient(receiptSwitch:)`).
        if let receipts = r.options["receipts"] { object["receipts"] = receipts }
        return object
    }

    /// An app's credentials, each with `active`: whether pushes of its channel and selector
    /// go through it (the newest that is not failing, else the newest, as
    /// `ChannelCredentialStore.activeChannelCredential` picks).
    public static func objects(_ records: [ChannelCredentialRecord]) -> [[String: Any]] {
        let active = activeIDs(records)
        return records.map { record in
            var object = Self.object(record)
            object["active"] = active.contains(record.id)
            return object
        }
    }

    /// The credential each (channel, selector) of `records` sends with.
    public static func activeIDs(_ records: [ChannelCredentialRecord]) -> Set<Int64> {
        struct Route: Hashable {
            var channel: PushChannel
            var selector: String?
        }
        let routes = Dictionary(grouping: records) { Route(channel: $0.channel, selector: $0.selector) }
        return Set(
            routes.values.compactMap { group in
                let newestFirst = group.sorted { $0.id > $1.id }
                return (newestFirst.first { !$0.isFailing } ?? newestFirst.first)?.id
            })
    }
}
