import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

/// Everything the gateway needs to know about one transport, declared from the transport's own
/// folder and listed once in the gateway's `TransportRegistry`: its channel (name, display name,
/// token rule, whether it is Android-style, the rule for its own per-message options), its
/// config section (`transports.<name>.*`, or the path it declares), the credential an operator
/// adds for it, how to make it, and where local mode's look-alike answers for it. Adding a transport is its folder, this declaration, a registry line and a name in
/// Package.swift's `transports` list.
public struct TransportDeclaration: Sendable {
    public var channel: ChannelDeclaration
    /// The keys of its config section it reads, with their defaults.
    public var configKeys: [TransportConfigKey]
    /// Its config section's path when not `transports.<name>`: a top-level section kept where
    /// operators have always had it (overridable as `TUISONG_<PATH>_<KEY>` all the same).
    public var configPath: String?
    /// The credential an operator adds for an app through a form (nil: it takes none, or its
    /// credentials are uploaded files, `TransportContext.uploadedCredentials`).
    public var credentialForm: CredentialForm?
    /// Makes the transport from its context (nil: a declaration that only declares its channel).
    public var make: (@Sendable (TransportContext) throws -> TransportInstance)?
    /// Its delivery receipts, for a service that posts them (nil: one that posts none).
    public var receipts: ReceiptDeclaration?
    /// What the service's own codes mean, in the service's documented sense, for a person
    /// reading a failing credential or a failure count (`"21301"` → "authentication failed: …").
    /// Keyed by the reason as stored (`SendReason.description`), in English and Chinese. A code
    /// without an entry is shown bare.
    public var serviceCodes: [String: LocalizedText]
    /// The service's own body for a push, made by the transport's own rendering (what the
    /// console shows of a message for each service); nil: the transport shows none.
    public var renderBody: (@Sendable (ServiceBodyRequest) -> ServiceBody)?
    /// The hosts its config section points elsewhere than the service's own (a look-alike, as
    /// the tests and local mode run one), where an uploaded credential may send its
    /// sign-in (`CredentialFormContext.testTokenHosts`); nil: its credentials name no such host.
    public var testTokenHosts: (@Sendable (TransportSection) -> Set<String>)?
    /// The payload every device of the service gets alike, for a service that has one: the
    /// console's view of a message and its test push's preview.
    public var sharedPayload: (@Sendable (PushContent, PushType) -> SharedPayload)?
    /// A response-time histogram of its own, by environment, under a name operators already
    /// scrape; nil: its answers are timed in `tuisong_channel_response_seconds` by channel.
    public var responseHistogram: ResponseHistogram?
    /// For a transport whose credentials are files an operator uploads (`.p8`, `.p12`, PEM; kept
    /// in the `CredentialRecord`s, per environment) rather than a declared form's fields: how an
    /// upload is checked. The credential API, the CLI and the console name that channel for them.
    public var uploadedCredentialForm: UploadedCredentialForm?
    /// Keys of the native API's `notification` object it reads into its own entry of the
    /// content (`PushContent.services[<name>]`).
    public var notificationFields: [NotificationField]
    /// Whether the service refuses a background-only push sent at once (priority 10): the native
    /// API then refuses such a message up front, naming the service, rather than each device
    /// failing later.
    public var refusesImmediateBackground: Bool

    /// A metric family's name and help text.
    public struct ResponseHistogram: Sendable, Equatable {
        public var name: String
        public var help: String

        public init(name: String, help: String) {
            self.name = name
            self.help = help
        }
    }

    public init(
        channel: ChannelDeclaration, configKeys: [TransportConfigKey] = [], credentialForm: CredentialForm? = nil,
        make: (@Sendable (TransportContext) throws -> TransportInstance)? = nil, receipts: ReceiptDeclaration? = nil,
        serviceCodes: [String: LocalizedText] = [:],
        renderBody: (@Sendable (ServiceBodyRequest) -> ServiceBody)? = nil,
        testTokenHosts: (@Sendable (TransportSection) -> Set<String>)? = nil,
        sharedPayload: (@Sendable (PushContent, PushType) -> SharedPayload)? = nil, configPath: String? = nil,
        responseHistogram: ResponseHistogram? = nil, uploadedCredentialForm: UploadedCredentialForm? = nil,
        notificationFields: [NotificationField] = [], refusesImmediateBackground: Bool = false
    ) {
        self.refusesImmediateBackground = refusesImmediateBackground
        self.notificationFields = notificationFields
        self.uploadedCredentialForm = uploadedCredentialForm
        self.configPath = configPath
        self.responseHistogram = responseHistogram
        self.testTokenHosts = testTokenHosts
        self.sharedPayload = sharedPayload
        self.serviceCodes = serviceCodes
        self.renderBody = renderBody
        self.receipts = receipts
        self.channel = channel
        self.configKeys = configKeys
        self.credentialForm = credentialForm
        self.make = make
    }

    public var name: String { channel.channel.rawValue }

    /// Whether its credentials are uploaded files (`uploadedCredentialForm`).
    public var takesUploadedFiles: Bool { uploadedCredentialForm != nil }

    /// Where its config section is: `configPath`, else `transports.<name>`.
    public var configSectionPath: String { configPath ?? "transports.\(name)" }

    /// The meaning of a stored reason: the service's own code from `serviceCodes`, else nil.
    public func meaning(of reason: String) -> LocalizedText? {
        if let meaning = serviceCodes[reason] { return meaning }
        // A reason stored with its detail (`1101/20003`) means what its code means.
        if let code = reason.split(separator: "/").first.map(String.init), code != reason {
            return serviceCodes[code]
        }
        return nil
    }

    /// How its entry of a message's per-service options is checked (`ChannelDeclaration.options`):
    /// the native API's object under its name, a vendor plugin's mapping. nil: it takes none.
    public var options: ServiceOptionsRule? { channel.options }
}

/// One key of a transport's config section, `transports.<name>.<key>` (or under its
/// `configPath`), overridable as `TUISONG_TRANSPORTS_<NAME>_<KEY>` like every other key.
public struct TransportConfigKey: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// An http(s) URL; `required` refuses an empty one.
        case url(required: Bool)
        /// An https URL with a host, never empty.
        case httpsURL
        /// A readable file, or empty for none; a relative path is from the config file's
        /// directory.
        case file
        /// A whole number in the range.
        case integer(ClosedRange<Int>)
    }
    public var key: String
    public var kind: Kind
    /// The default, as the embedded config has it (a string for a URL or a file, digits for an
    /// integer).
    public var defaultValue: String

    public init(_ key: String, _ kind: Kind, default defaultValue: String) {
        self.key = key
        self.kind = kind
        self.defaultValue = defaultValue
    }
}

/// A transport's config section as typed by the gateway (`transports.<name>.*`).
public struct TransportSection: Sendable, Equatable {
    public var values: [String: String]

    public init(_ values: [String: String] = [:]) { self.values = values }

    public subscript(key: String) -> String { values[key] ?? "" }

    public func integer(_ key: String, default fallback: Int) -> Int { Int(values[key] ?? "") ?? fallback }

    /// The value, or nil when empty.
    public func optional(_ key: String) -> String? { values[key].flatMap { $0.isEmpty ? nil : $0 } }
}

/// What a transport is made with.
public struct TransportContext: Sendable {
    public var channel: PushChannel
    /// Its config section.
    public var section: TransportSection
    /// In local mode, the look-alike's `https://127.0.0.1:<port>`: every URL of the service,
    /// its sign-in endpoints too, is this base with the service's own path.
    public var localBaseURL: String?
    /// A new HTTP client (one event thread) with the gateway's `transports.*` settings.
    public var client: @Sendable (_ label: String) throws -> HTTPClient
    /// For a transport with connections of its own (the HTTP/2 engine's pools): the CAs
    /// `transports.ca_file` (or local mode's look-alike CA) trusts instead of the system's, and
    /// `transports.connect_timeout_seconds`.
    public var caFile: String?
    public var connectTimeout: Duration
    public var resolver: ChannelCredentialResolver
    public var requestTimeout: Duration
    public var tokensPerRequest: Int
    public var clock: any Clock
    public var logger: Logger
    /// Where and how to ask the service for receipts (nil: `receipts.public_url` is empty).
    public var receipts: ReceiptSettings?
    /// The receipt tokens of the apps that post their own receipts (nil: none is rendered).
    public var appReceipts: AppReceiptTokens?
    /// For a transport whose credentials are uploaded files (`.p8`, `.p12`, PEM): where they
    /// are stored and how they open. nil for the others.
    public var uploadedCredentials: UploadedCredentials?
    /// In local mode, the look-alike standing in for the service (nil: the service itself).
    public var localLookAlike: LocalLookAlike?

    public init(
        channel: PushChannel, section: TransportSection, localBaseURL: String?,
        client: @escaping @Sendable (_ label: String) throws -> HTTPClient, resolver: ChannelCredentialResolver,
        requestTimeout: Duration, tokensPerRequest: Int, clock: any Clock, logger: Logger,
        receipts: ReceiptSettings? = nil, appReceipts: AppReceiptTokens? = nil,
        uploadedCredentials: UploadedCredentials? = nil, localLookAlike: LocalLookAlike? = nil,
        caFile: String? = nil, connectTimeout: Duration = .seconds(10)
    ) {
        self.caFile = caFile
        self.connectTimeout = connectTimeout
        self.uploadedCredentials = uploadedCredentials
        self.localLookAlike = localLookAlike
        self.appReceipts = appReceipts
        self.receipts = receipts
        self.channel = channel
        self.section = section
        self.localBaseURL = localBaseURL
        self.client = client
        self.resolver = resolver
        self.requestTimeout = requestTimeout
        self.tokensPerRequest = tokensPerRequest
        self.clock = clock
        self.logger = logger
    }

    /// `section[key]`, or in local mode the look-alike's base with `localPath`.
    public func url(_ key: String, localPath: String = "") -> String {
        localBaseURL.map { $0 + localPath } ?? section[key]
    }
}

/// A made transport and what the gateway reads of it.
public struct TransportInstance: Sendable {
    public var transport: any PushTransport
    /// Its access tokens (nil: it signs its own requests).
    public var tokens: AccessTokenCache?
    /// Its HTTP client's figures (nil: it has no `HTTPClient`, but pools of its own).
    public var statistics: (@Sendable () -> HTTPClientStatistics)?
    /// Closes its connections; awaited on the gateway's shutdown.
    public var shutdown: @Sendable () async -> Void
    /// One sign-in past the cache, for a service that has one (nil: a service whose secret is
    /// the key of every request has nothing to check before a push).
    public var checkSignIn: (@Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure>)?
    /// Until when a credential's daily quota is used up (a service with one).
    public var quotaExhausted: (@Sendable (Int64) -> Date?)?
    /// For a transport that looks its uploaded credentials up itself: what the gateway asks of
    /// it when they change. nil: its `ChannelCredentialResolver` answers.
    public var uploadedCredentials: UploadedCredentialHooks?
    /// Its own gauges on `/metrics` (its connection pools').
    public var gauges: [TransportGauge]

    public init(
        transport: any PushTransport, tokens: AccessTokenCache?,
        statistics: (@Sendable () -> HTTPClientStatistics)?,
        shutdown: @escaping @Sendable () async -> Void,
        checkSignIn: (@Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure>)?,
        quotaExhausted: (@Sendable (Int64) -> Date?)?, uploadedCredentials: UploadedCredentialHooks? = nil,
        gauges: [TransportGauge] = []
    ) {
        self.uploadedCredentials = uploadedCredentials
        self.gauges = gauges
        self.transport = transport
        self.tokens = tokens
        self.statistics = statistics
        self.shutdown = shutdown
        self.checkSignIn = checkSignIn
        self.quotaExhausted = quotaExhausted
    }

    /// A token-batch transport (`TokenBatchService`) made from the context.
    public static func tokenBatch<Service: TokenBatchService>(
        _ service: Service, _ context: TransportContext, checksSignIn: Bool = true, hasQuota: Bool = true
    ) throws -> TransportInstance {
        let transport = TokenBatchTransport(
            service: service, client: try context.client(context.channel.rawValue), resolver: context.resolver,
            requestTimeout: context.requestTimeout, tokensPerRequest: context.tokensPerRequest, clock: context.clock,
            logger: context.logger, appReceipts: context.appReceipts)
        var signIn: (@Sendable (ChannelCredential) async -> Result<AccessToken, AccessTokenFailure>)?
        if checksSignIn { signIn = { credential in await transport.checkSignIn(credential) } }
        var quota: (@Sendable (Int64) -> Date?)?
        if hasQuota { quota = { id in transport.quotaExhausted(credentialID: id) } }
        let statistics: @Sendable () -> HTTPClientStatistics = { transport.statistics }
        let shutdown: @Sendable () -> Void = { transport.shutdown() }
        return TransportInstance(
            transport: transport, tokens: transport.tokens, statistics: statistics, shutdown: shutdown,
            checkSignIn: signIn, quotaExhausted: quota)
    }
}

/// The credential an operator adds for an app on a channel: the fields the CLI
/// (`credential add --channel <name> --<field> …`), the admin API (`POST
/// /admin/api/apps/{app}/channel-credentials`, one JSON key per field) and the console's form
/// ask for, and how what they give is checked.
public struct CredentialForm: Sendable {
    public struct Field: Sendable, Equatable {
        public enum Kind: String, Sendable, Equatable {
            /// A line of text.
            case text
            /// A secret: never shown back, read by the CLI from an environment variable
            /// (`--<flag>-env VAR`), a password input in the console.
            case secret
            /// A file's bytes: a path to the CLI, base64 to the admin API, a file input in the console.
            case file
        }
        /// The JSON key, and (with `-` for `_`) the CLI flag.
        public var name: String
        public var kind: Kind
        public var required: Bool
        public var label: LocalizedLabel
        public var help: String
        /// The help in Chinese, for the console in Chinese (nil: the English one).
        public var helpZH: String?
        /// What the console's input shows when empty, and the keyboard it asks for.
        public var placeholder: String
        public var numeric: Bool
        /// For a file: the console's `accept`.
        public var accept: String
        /// The CLI's flag when it is not the name's (`file` → `--service-account`).
        public var cliName: String?
        /// What a text or secret value may hold (ignored for a file). By default printable
        /// ASCII without spaces: never a line break, a NUL, a control or an invisible character.
        public var rule: CredentialFieldRule
        /// What the console says of a refused value (`invalid_<name>`), in English and Chinese,
        /// when the console's words for the field name do not fit this service (an app id that
        /// is a package name, not the number the others' consoles show); nil: the console's own.
        public var refusal: LocalizedLabel?

        public init(
            _ name: String, _ kind: Kind = .text, required: Bool = true, label: LocalizedLabel, help: String,
            helpZH: String? = nil, placeholder: String = "", numeric: Bool = false, accept: String = "",
            cliName: String? = nil, rule: CredentialFieldRule? = nil, refusal: LocalizedLabel? = nil
        ) {
            self.refusal = refusal
            self.helpZH = helpZH
            self.cliName = cliName
            self.rule = rule ?? (kind == .secret ? .secret : .printable(1...256))
            self.name = name
            self.kind = kind
            self.required = required
            self.label = label
            self.help = help
            self.placeholder = placeholder
            self.numeric = numeric
            self.accept = accept
        }

        /// `--vendor-app-id`; a secret's flag names the environment variable: `--client-secret-env`.
        public var cliFlag: String {
            "--" + (cliName ?? name.replacingOccurrences(of: "_", with: "-")) + (kind == .secret ? "-env" : "")
        }
    }

    /// A field's label in both of the console's languages.
    public typealias LocalizedLabel = LocalizedText

    public var fields: [Field]
    /// The form's own check, past the fields' rules: the shapes a file's contents must have,
    /// what the fields mean together; says what to store.
    private let check:
        @Sendable (CredentialFormInput, CredentialFormContext) throws(CredentialFormError) -> ValidatedCredential

    public init(
        fields: [Field],
        validate:
            @escaping @Sendable (CredentialFormInput, CredentialFormContext) throws(CredentialFormError) ->
            ValidatedCredential
    ) {
        self.fields = fields
        self.check = validate
    }

    /// Checks what was given, the one place every surface (CLI, admin API, console) goes
    /// through: each required field present, each text and secret field of its rule's
    /// alphabet and length (`invalid_<field>`), then the form's own check.
    public func validate(_ input: CredentialFormInput, _ context: CredentialFormContext) throws(CredentialFormError)
        -> ValidatedCredential
    {
        for field in fields where field.kind != .file {
            // Text is trimmed of spaces; a secret is taken as given (a stray space is refused).
            let value = field.kind == .secret ? input.values[field.name] ?? "" : input.text(field.name)
            if value.isEmpty {
                guard field.required else { continue }
                throw CredentialFormError(
                    "invalid_\(field.name)", field: field.name, "the \(field.label.en) is required",
                    zh: "\(field.label.zh)为必填项")
            }
            if let problem = field.rule.problemText(value) {
                throw CredentialFormError(
                    "invalid_\(field.name)", field: field.name, "the \(field.label.en) \(problem.en)",
                    zh: "\(field.label.zh)\(problem.zh)")
            }
        }
        return try check(input, context)
    }
}

/// What a credential field may hold: an alphabet and a length in characters (all ASCII, so
/// bytes). Real values are never refused (each service's console issues ids of these
/// alphabets); a value no service issues (a line break, a NUL, a right-to-left mark, an emoji,
/// markup) is, before it reaches a header, a URL, a log line or the console.
public struct CredentialFieldRule: Sendable, Equatable {
    public enum Alphabet: String, Sendable, Equatable {
        /// 0–9.
        case digits
        /// ASCII letters, digits, `-`, `_` and `.` (client ids, app keys, UUIDs, key ids).
        case identifier
        /// Printable ASCII without the space (`!` to `~`): secrets, ids of no documented alphabet.
        case printable
        /// A Java (Android) package name: two or more dot-separated segments, each a letter
        /// then letters, digits or `_`.
        case javaPackage
        /// A Java class name: dot-separated segments of letters, digits, `_` and `$`, each
        /// starting with a letter, `_` or `$`.
        case javaClass
    }
    public var alphabet: Alphabet
    public var length: ClosedRange<Int>

    public init(_ alphabet: Alphabet, _ length: ClosedRange<Int>) {
        self.alphabet = alphabet
        self.length = length
    }

    public static func digits(_ length: ClosedRange<Int>) -> Self { .init(.digits, length) }
    public static func identifier(_ length: ClosedRange<Int>) -> Self { .init(.identifier, length) }
    public static func printable(_ length: ClosedRange<Int>) -> Self { .init(.printable, length) }
    /// A secret: printable ASCII without spaces, at most 1 KiB.
    public static let secret = CredentialFieldRule(.printable, 1...1024)

    /// Why `value` does not keep to the rule (completing "the Client ID …"), or nil when it does.
    public func problem(_ value: String) -> String? { problemText(value)?.en }

    /// `problem` in both of the console's languages (the Chinese completes "Client ID…").
    public func problemText(_ value: String) -> LocalizedText? {
        let bytes = Array(value.utf8)
        guard length.contains(bytes.count), bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E }), wellFormed(bytes) else {
            return LocalizedText(
                en: "must be \(description), \(lengthText)", zh: "须为\(descriptionZH)，\(lengthTextZH)")
        }
        return nil
    }

    /// The alphabet in Chinese.
    private var descriptionZH: String {
        switch alphabet {
        case .digits: "数字"
        case .identifier: "ASCII 字母、数字及 '-'、'_'、'.'"
        case .printable: "不含空格和换行的可打印 ASCII 字符"
        case .javaPackage: "形如 com.example.chat 的包名（以点分隔的字母、数字和 '_'）"
        case .javaClass: "形如 com.example.MainActivity 的类名"
        }
    }

    private var lengthTextZH: String {
        length.lowerBound == length.upperBound
            ? "恰好 \(length.lowerBound) 个字符"
            : length.lowerBound <= 1
                ? "最多 \(length.upperBound) 个字符"
                : "\(length.lowerBound) 到 \(length.upperBound) 个字符"
    }

    /// The alphabet in words.
    public var description: String {
        switch alphabet {
        case .digits: "digits"
        case .identifier: "ASCII letters, digits, '-', '_' and '.'"
        case .printable: "printable ASCII without spaces or line breaks"
        case .javaPackage: "a package name such as com.example.chat (letters, digits and '_' between dots)"
        case .javaClass: "a class name such as com.example.MainActivity"
        }
    }

    private var lengthText: String {
        length.lowerBound == length.upperBound
            ? "exactly \(length.lowerBound) characters"
            : length.lowerBound <= 1
                ? "at most \(length.upperBound) characters"
                : "\(length.lowerBound) to \(length.upperBound) characters"
    }

    private func wellFormed(_ bytes: [UInt8]) -> Bool {
        func isDigit(_ byte: UInt8) -> Bool { byte >= 0x30 && byte <= 0x39 }
        func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) >= 0x61 && (byte | 0x20) <= 0x7A }
        let dot = UInt8(ascii: ".")
        switch alphabet {
        case .digits: return bytes.allSatisfy(isDigit)
        case .identifier: return bytes.allSatisfy { isLetter($0) || isDigit($0) || "-_.".utf8.contains($0) }
        case .printable: return true
        case .javaPackage:
            let segments = bytes.split(separator: dot, omittingEmptySubsequences: false)
            return segments.count >= 2
                && segments.allSatisfy { segment in
                    guard let first = segment.first, isLetter(first) else { return false }
                    return segment.allSatisfy { isLetter($0) || isDigit($0) || $0 == UInt8(ascii: "_") }
                }
        case .javaClass:
            let symbols = "_$".utf8
            return bytes.split(separator: dot, omittingEmptySubsequences: false).allSatisfy { segment in
                guard let first = segment.first, isLetter(first) || symbols.contains(first) else { return false }
                return segment.allSatisfy { isLetter($0) || isDigit($0) || symbols.contains($0) }
            }
        }
    }
}

/// What an operator gave: text and secret fields as strings, files as bytes.
public struct CredentialFormInput: Sendable {
    public var values: [String: String]
    public var files: [String: [UInt8]]

    public init(values: [String: String] = [:], files: [String: [UInt8]] = [:]) {
        self.values = values
        self.files = files
    }

    /// The trimmed text of a field; empty when absent.
    public func text(_ name: String) -> String { (values[name] ?? "").trimmingCharacters(in: .whitespaces) }
}

/// What a form's check may consult beyond the input.
public struct CredentialFormContext: Sendable {
    /// Hosts besides a service's own that a credential may name for signing in (the look-alikes
    /// the operator's config points at).
    public var testTokenHosts: Set<String>

    public init(testTokenHosts: Set<String>) { self.testTokenHosts = testTokenHosts }
}

/// A refusal of a form: a code in the admin API's dialect (`invalid_client_id`), the field it
/// is about, and a sentence.
public struct CredentialFormError: Error, Sendable, Equatable {
    public var code: String
    public var field: String
    public var message: String
    /// The message in Chinese, for the console in Chinese (nil: it shows its own words for the
    /// code alone).
    public var messageZH: String?

    public init(_ code: String, field: String, _ message: String, zh: String? = nil) {
        self.code = code
        self.field = field
        self.message = message
        self.messageZH = zh
    }

    /// The message in both languages, when the transport gave the Chinese.
    public var text: LocalizedText? { messageZH.map { LocalizedText(en: message, zh: $0) } }
}

/// What a checked form stores: the identities shown in lists, the secret (sealed by the gateway
/// under the master key) and the service's options.
public struct ValidatedCredential: Sendable, Equatable {
    public var vendorAppID: String
    public var clientID: String
    public var secret: [UInt8]
    public var options: [String: String]

    public init(vendorAppID: String, clientID: String, secret: [UInt8], options: [String: String] = [:]) {
        self.vendorAppID = vendorAppID
        self.clientID = clientID
        self.secret = secret
        self.options = options
    }
}

extension CredentialForm {
    /// The app-id / client-id / secret form the Chinese makers' services share (an OAuth 2.0
    /// client; a package, AppID and AppSecret; an AppID, AppKey and MasterSecret or AppSecret),
    /// each field labelled in the service's words, with an optional badge class.
    /// - Parameters:
    ///   - packageName: the app id is the app's package name, not a number.
    ///   - receiptID: the optional receipt id the service's console made for the app's receipt
    ///     address, kept as the option `receipt_id`.
    ///   - receiptSwitch: an optional `receipts` field, `on` or `off` (empty: off), kept as the
    ///     option `receipts: on`: for a service whose receipt field is not confirmed, so a push
    ///     asks for receipts only once the operator set up the service's receipt configuration.
    public static func appClient(
        _ channel: PushChannel, appID: LocalizedLabel, clientID: LocalizedLabel, secret: LocalizedLabel,
        packageName: Bool = false, badgeClass: Bool = false, receiptID: Bool = false, receiptSwitch: Bool = false
    ) -> CredentialForm {
        var fields: [Field] = [
            Field(
                "vendor_app_id", label: appID,
                help: packageName
                    ? "the app's package name, e.g. com.example.chat" : "the app id the developer console shows",
                helpZH: packageName ? "应用的包名，例如 com.example.chat" : "开发者控制台显示的应用 ID",
                placeholder: packageName ? "com.example.chat" : "10086", numeric: !packageName,
                rule: packageName ? .init(.javaPackage, 3...255) : .digits(1...18),
                refusal: packageName
                    ? LocalizedLabel(
                        en: "For this service the app id is the app’s package name, e.g. com.example.chat.",
                        zh: "该推送服务的应用 ID 是应用的包名，例如 com.example.chat。") : nil),
            Field(
                "client_id", label: clientID, help: "the \(clientID.en) the developer console shows",
                helpZH: "开发者控制台显示的\(clientID.zh)",
                rule: .identifier(1...128)),
            Field(
                "client_secret", .secret, label: secret,
                help: "the \(secret.en) (the CLI reads it from the environment variable named: shells keep history)",
                helpZH: "开发者控制台显示的\(secret.zh)（命令行从所指定的环境变量读取：shell 会留下历史记录）"),
        ]
        if badgeClass {
            fields.append(
                Field(
                    "badge_class", required: false, label: LocalizedLabel(en: "Badge class", zh: "角标 Activity"),
                    help: "the launcher activity a badge number is shown on", helpZH: "显示角标数字的应用入口 Activity",
                    placeholder: "com.example.MainActivity",
                    rule: .init(.javaClass, 1...256)))
        }
        if receiptID {
            fields.append(
                Field(
                    "receipt_id", required: false, label: LocalizedLabel(en: "Receipt id", zh: "回执 ID"),
                    help: "the receipt id the service's console shows for the app's receipt configuration",
                    helpZH: "推送平台控制台为应用的回执配置显示的回执 ID", placeholder: "1234",
                    rule: .identifier(1...64),
                    refusal: LocalizedLabel(
                        en:
                            "The receipt id is the one the service’s console shows for the receipt address (letters, digits, -, _ and ., at most 64).",
                        zh: "回执 ID 是推送平台控制台为回执地址生成的 ID（字母、数字和 -、_、.，最多 64 个字符）。")))
        }
        if receiptSwitch {
            fields.append(
                Field(
                    "receipts", required: false, label: LocalizedLabel(en: "Delivery receipts", zh: "送达回执"),
                    help:
                        "on: each push asks the service for delivery receipts (set up its receipt configuration first); empty or off: none",
                    helpZH: "on：每次推送都请求送达回执（请先在推送平台配置回执）；留空或 off：不请求", placeholder: "on",
                    rule: .identifier(2...3),
                    refusal: LocalizedLabel(
                        en: "Delivery receipts is on or off.", zh: "送达回执须为 on 或 off。")))
        }
        return CredentialForm(fields: fields) { (input, _) throws(CredentialFormError) -> ValidatedCredential in
            let appIDText = input.text("vendor_app_id")
            if packageName {
                // A service that addresses the app by its package name (restricted_package_name).
                guard !appIDText.isEmpty, appIDText.count <= 255, appIDText.contains("."),
                    appIDText.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_") })
                else {
                    throw CredentialFormError(
                        "invalid_vendor_app_id", field: "vendor_app_id",
                        "for \(channel.rawValue) the app id is the app's package name, e.g. com.example.chat",
                        zh: "该推送服务的应用 ID 是应用的包名，例如 com.example.chat")
                }
            } else {
                // A positive number as the developer console shows it (the services' run to
                // nine digits or so): no sign, no leading zero, at most 18 digits (fits an Int64).
                guard (1...18).contains(appIDText.utf8.count), appIDText.first != "0",
                    appIDText.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") })
                else {
                    throw CredentialFormError(
                        "invalid_vendor_app_id", field: "vendor_app_id",
                        "the \(channel.rawValue) app id is the number the developer console shows (1 to 18 digits, not starting with 0)",
                        zh: "应用 ID 是开发者控制台显示的数字（1 到 18 位，不以 0 开头）")
                }
            }
            let client = input.text("client_id")
            guard !client.isEmpty, client.count <= 256, !client.contains(where: \.isWhitespace) else {
                throw CredentialFormError(
                    "invalid_client_id", field: "client_id", "the client id is required and has no spaces",
                    zh: "\(clientID.zh)为必填项，且不能含空格")
            }
            let clientSecret = input.values["client_secret"] ?? ""
            guard !clientSecret.isEmpty, clientSecret.utf8.count <= 1024 else {
                throw CredentialFormError(
                    "invalid_client_secret", field: "client_secret", "the client secret is required (at most 1 KiB)",
                    zh: "\(secret.zh)为必填项（最多 1 KiB）")
            }
            var options: [String: String] = [:]
            let badge = input.text("badge_class")
            if badgeClass, !badge.isEmpty {
                guard badge.count <= 256,
                    badge.allSatisfy({
                        $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "." || $0 == "_" || $0 == "$")
                    })
                else {
                    throw CredentialFormError(
                        "invalid_badge_class", field: "badge_class",
                        "the badge class is the launcher activity's class name, e.g. com.example.MainActivity",
                        zh: "角标 Activity 是应用入口 Activity 的类名，例如 com.example.MainActivity")
                }
                options["badge_class"] = badge
            }
            let receipt = input.text("receipt_id")
            if receiptID, !receipt.isEmpty {
                guard receipt.count <= 64,
                    receipt.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) })
                else {
                    throw CredentialFormError(
                        "invalid_receipt_id", field: "receipt_id",
                        "the receipt id is the one the console shows (letters, digits, '-', '_', '.'; at most 64)",
                        zh: "回执 ID 是推送平台控制台显示的 ID（字母、数字和 -、_、.，最多 64 个字符）")
                }
                options["receipt_id"] = receipt
            }
            let receipts = input.text("receipts").lowercased()
            if receiptSwitch, !receipts.isEmpty {
                guard receipts == "on" || receipts == "off" else {
                    throw CredentialFormError(
                        "invalid_receipts", field: "receipts", "delivery receipts is on or off",
                        zh: "送达回执须为 on 或 off")
                }
                if receipts == "on" { options["receipts"] = "on" }
            }
            return ValidatedCredential(
                vendorAppID: appIDText, clientID: client, secret: Array(clientSecret.utf8), options: options)
        }
    }
}
