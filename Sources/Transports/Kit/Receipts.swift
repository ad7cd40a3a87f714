import Foundation
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongDelivery

/// The keys of delivery receipts, derived from one root the gateway derives from its master key
/// (so nothing new is stored, and every node of a cluster derives the same): per app, the MAC
/// key of the tags Tuisong puts in a send and of the receipt tokens an app posts back. (The
/// callback credentials of the services that sign their receipts are stored per app and
/// service instead, `ReceiptSettingsStore`; `derivedCallbackCredentials` are what earlier
/// builds derived, kept for the apps that had them.)
public struct ReceiptKeys: Sendable {
    private let root: [UInt8]
    /// The app secrets derived so far. Deriving one is an HMAC as costly as the MAC made under
    /// it, and an unsigned service's POST checks a MAC per status (a one-token
    /// tag covers its token), so each was paying twice. Copies of these keys share it.
    private let appSecrets: AppSecrets

    public init(root: [UInt8]) {
        self.root = root
        appSecrets = AppSecrets()
    }

    private func key(_ label: String) -> [UInt8] { HMAC.sha256(key: root, message: Array(label.utf8)) }

    /// The app's receipt secret: every MAC Tuisong puts in a send for the app is made under it.
    /// Derived from the master key (nothing stored, the same on every node); the one place to
    /// change should per-app secrets be stored instead.
    public func appSecret(appID: Int64) -> [UInt8] {
        appSecrets.secret(appID: appID) { key("tag:app:\(appID)") }
    }

    /// The tag a send names so its receipts find their message: `<message id>.<MAC>`, the MAC
    /// 16 base64url characters (96 bits) of HMAC-SHA256 under the app's key. 30 characters at
    /// most: within the 50 or 64 characters the services take as a callback param. A
    /// tag copied from one app's send verifies for no other app, nor for another message.
    ///
    ///     keys.tag(appID: 7, messageID: 42)  // "42.mZ3b…"
    public func tag(appID: Int64, messageID: Int64) -> String {
        "\(messageID)." + mac(appID: appID, "message:\(messageID)")
    }

    /// The message a tag names, if it is this app's tag; nil for a forged or another app's tag.
    public func messageID(tag: String, appID: Int64) -> Int64? {
        guard let dot = tag.firstIndex(of: "."), let id = Int64(tag[..<dot]), id > 0 else { return nil }
        return constantTimeEqual(String(tag[tag.index(after: dot)...]), mac(appID: appID, "message:\(id)")) ? id : nil
    }

    /// The per-delivery token a push carries for the app to post back (`POST /api/v1/receipts`):
    /// `<message id>.<device id>.<MAC>` (ids, not the device's token: a device token alone may
    /// be longer than this whole token).
    public func deliveryToken(appID: Int64, messageID: Int64, deviceID: Int64) -> String {
        "\(messageID).\(deviceID)." + mac(appID: appID, "delivery:\(messageID):\(deviceID)")
    }

    /// The message and device a per-delivery token names, if it verifies under the app's key.
    public func delivery(token: String, appID: Int64) -> (messageID: Int64, deviceID: Int64)? {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let message = Int64(parts[0]), let device = Int64(parts[1]), message > 0, device > 0,
            constantTimeEqual(String(parts[2]), mac(appID: appID, "delivery:\(message):\(device)"))
        else { return nil }
        return (message, device)
    }

    /// The callback user name and key earlier builds derived for `channel`'s receipt
    /// configuration of `appID` (the key: 32 base64url characters): an app that existed then
    /// is given these as its first stored ones, so a configuration an operator entered keeps
    /// verifying.
    public func derivedCallbackCredentials(appID: Int64, channel: PushChannel) -> CallbackCredentials {
        let key = base64URL(key("callback:\(channel.rawValue):app:\(appID)")).prefix(32)
        return CallbackCredentials(userName: "tuisong\(appID)", key: String(key))
    }

    /// The `param` of a request to one device token, for the services that do not sign their
    /// receipts: `t<message id>.<MAC>`, the MAC over the message and the token, so the
    /// receipt's target must be that token. 37 characters at most, within the services' 50.
    ///
    ///     keys.tokenTag(appID: 7, messageID: 42, token: "regid")  // "t42.Qx0…"
    public func tokenTag(appID: Int64, messageID: Int64, token: String) -> String {
        "t\(messageID)." + mac(appID: appID, "message:\(messageID):token:\(token)")
    }

    /// The `param` of a request to many tokens: `s<send id>.<MAC>`, the send
    /// id naming a `ReceiptSend` recorded before the request, which holds the message and the
    /// request's tokens. 37 characters at most, within the services' 64.
    public func sendTag(appID: Int64, sendID: Int64) -> String {
        "s\(sendID)." + mac(appID: appID, "send:\(sendID)")
    }

    /// What a receipt's tag names, if it verifies under the app's secret; nil for a forged tag,
    /// another app's, or no tag of Tuisong's. A `.token` tag verifies only with the receipt's
    /// own target (`token`), so it cannot be moved onto another device.
    public func resolve(tag: String, appID: Int64, token: String) -> ReceiptTag? {
        guard let dot = tag.firstIndex(of: ".") else { return nil }
        let head = tag[..<dot]
        let given = String(tag[tag.index(after: dot)...])
        switch head.first {
        case "t":
            guard let id = Int64(head.dropFirst()), id > 0,
                constantTimeEqual(given, mac(appID: appID, "message:\(id):token:\(token)"))
            else { return nil }
            return .token(messageID: id)
        case "s":
            guard let id = Int64(head.dropFirst()), id > 0, constantTimeEqual(given, mac(appID: appID, "send:\(id)"))
            else { return nil }
            return .send(id)
        default:
            return messageID(tag: tag, appID: appID).map(ReceiptTag.message)
        }
    }

    private func mac(appID: Int64, _ text: String) -> String {
        String(base64URL(HMAC.sha256(key: appSecret(appID: appID), message: Array(text.utf8))).prefix(16))
    }
}

/// The app secrets a `ReceiptKeys` derived, kept (each is a function of the root and the app id
/// alone, so nothing goes stale). Bounded: an unsigned service's route takes any app id in its
/// URL, so ids nobody has are derived too; past `limit` apps it starts again from empty.
final class AppSecrets: Sendable {
    static let limit = 4096
    private let secrets = Mutex<[Int64: [UInt8]]>([:])

    func secret(appID: Int64, derive: () -> [UInt8]) -> [UInt8] {
        if let known = secrets.withLock({ $0[appID] }) { return known }
        let secret = derive()
        secrets.withLock { secrets in
            if secrets.count >= Self.limit { secrets.removeAll(keepingCapacity: true) }
            secrets[appID] = secret
        }
        return secret
    }

    var count: Int { secrets.withLock { $0.count } }
}

extension ReceiptSend {
    /// The send of `tokens`, kept as digests.
    public init(appID: Int64, messageID: Int64, channel: PushChannel, tokens: [String]) {
        self.init(appID: appID, messageID: messageID, channel: channel, tokenDigests: Set(tokens.map(Self.digest)))
    }

    /// A token's digest: 16 hex characters of its SHA-256 (a 1,000-token request keeps 17 KB).
    public static func digest(_ token: String) -> String {
        Hex.encode(Array(Digest.sha256(Array(token.utf8)).prefix(8)))
    }

    /// Whether the request was sent to `token`.
    public func contains(token: String) -> Bool { tokenDigests.contains(Self.digest(token)) }
}

/// What a verified receipt tag names.
public enum ReceiptTag: Sendable, Equatable {
    /// A message (a `biTag`): any token, on a POST the service signed.
    case message(Int64)
    /// A message sent to the receipt's own token.
    case token(messageID: Int64)
    /// A recorded request to many tokens (`ReceiptStore.receiptSend`).
    case send(Int64)
}

/// The callback user name and key of an app's receipt configuration with a service that signs
/// its receipts (`CallbackSignature`): what the
/// operator enters in the service's console, and what the gateway verifies each POST with.
public struct CallbackCredentials: Sendable, Hashable {
    public var userName: String
    public var key: String

    public init(userName: String, key: String) {
        self.userName = userName
        self.key = key
    }

    /// The service consoles' limits as far as documented: a user name and key of printable
    /// ASCII without spaces, 1–64 characters (a made key is 32).
    public static func isValid(_ text: String) -> Bool {
        (1...64).contains(text.count) && text.unicodeScalars.allSatisfy { (0x21...0x7E).contains($0.value) }
    }

    /// A new key: 32 base64url characters (192 random bits).
    public static func randomKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(base64URL((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }).prefix(32))
    }
}

public func base64URL(_ bytes: [UInt8]) -> String { Base64URL.encode(bytes) }

func constantTimeEqual(_ a: String, _ b: String) -> Bool {
    let x = Array(a.utf8)
    let y = Array(b.utf8)
    guard x.count == y.count else { return false }
    var difference: UInt8 = 0
    for i in x.indices { difference |= x[i] ^ y[i] }
    return difference == 0
}

/// What a transport needs to ask for receipts: where the services reach the gateway
/// (`receipts.public_url`) and the keys. nil in `TransportContext.receipts` when receipts are
/// off: no receipt field is sent.
public struct ReceiptSettings: Sendable {
    /// `receipts.public_url`, without a trailing slash.
    public var publicURL: String {
        let url = resolvePublicURL()
        return url.hasSuffix("/") ? String(url.dropLast()) : url
    }
    public var keys: ReceiptKeys
    /// Where a request of many tokens is recorded before it asks for receipts by one `param`
    /// nil: such requests ask for none.
    public var sends: (any ReceiptSendLog)?
    private let resolvePublicURL: @Sendable () -> String

    public init(publicURL: String, keys: ReceiptKeys, sends: (any ReceiptSendLog)? = nil) {
        self.init(keys: keys, sends: sends, publicURL: { publicURL })
    }

    /// Settings whose URL is known late: local mode's default, the gateway's own listener,
    /// whose port is bound after the transports are made.
    public init(keys: ReceiptKeys, sends: (any ReceiptSendLog)? = nil, publicURL: @escaping @Sendable () -> String) {
        self.keys = keys
        self.sends = sends
        self.resolvePublicURL = publicURL
    }

    /// The tag of the message `headers` belong to, nil outside a message.
    public func tag(_ headers: PushHeaders) -> String? {
        guard let messageID = headers.messageID, let appID = headers.appID else { return nil }
        return keys.tag(appID: appID, messageID: messageID)
    }

    /// `POST /receipts/{channel}/{app id}`: the URL registered in a service's console or put in
    /// its per-request callback field.
    public func url(channel: PushChannel, appID: Int64) -> String {
        "\(publicURL)/receipts/\(channel.rawValue)/\(appID)"
    }

    /// The receipts a push with `headers` asks `channel` for; nil outside a message.
    public func request(channel: PushChannel, _ headers: PushHeaders) -> ReceiptRequest? {
        guard let messageID = headers.messageID, let appID = headers.appID else { return nil }
        return ReceiptRequest(settings: self, channel: channel, appID: appID, messageID: messageID)
    }
}

/// Where the requests of many tokens that ask for receipts by one `param` are recorded before
/// they are sent (the store's `recordReceiptSend`), so a receipt's targets can be checked
/// against the request's tokens.
public protocol ReceiptSendLog: Sendable {
    /// Records the request and returns its id.
    func recordReceiptSend(_ send: ReceiptSend) async throws -> Int64
}

/// The receipt fields of one push's requests, for the services that take a callback URL and a
/// `param` per request.
public struct ReceiptRequest: Sendable {
    public var settings: ReceiptSettings
    public var channel: PushChannel
    public var appID: Int64
    public var messageID: Int64

    /// The URL the service posts to.
    public var url: String { settings.url(channel: channel, appID: appID) }

    /// The `param` of a request to `token` alone.
    public func param(token: String) -> String {
        settings.keys.tokenTag(appID: appID, messageID: messageID, token: token)
    }

    /// The `param` of a request to `tokens`: a one-token request's own, else a recorded send's
    /// (nil when no log is set or it could not be written: the request asks for no receipt).
    public func param(tokens: [String]) async -> String? {
        if tokens.count == 1 { return param(token: tokens[0]) }
        guard let log = settings.sends else { return nil }
        let send = ReceiptSend(appID: appID, messageID: messageID, channel: channel, tokens: tokens)
        guard let id = try? await log.recordReceiptSend(send) else { return nil }
        return settings.keys.sendTag(appID: appID, sendID: id)
    }
}

/// A receipt POST as a service sends it.
public struct ReceiptPost: Sendable {
    /// Header names in lower case.
    public var headers: [String: String]
    public var body: [UInt8]
    public var appID: Int64
    public var now: Date
    /// The app's callback credentials with the POST's service, for a service that signs
    /// (`ReceiptDeclaration.usesCallbackCredentials`); nil for the others.
    public var callbackCredentials: CallbackCredentials?

    public init(
        headers: [String: String], body: [UInt8], appID: Int64, now: Date,
        callbackCredentials: CallbackCredentials? = nil
    ) {
        self.headers = headers
        self.body = body
        self.appID = appID
        self.now = now
        self.callbackCredentials = callbackCredentials
    }
}

/// One status of a receipt POST as the service wrote it: the tag Tuisong sent (a `biTag`, a
/// `param`), the device's token, what happened and when.
public struct ServiceReceipt: Sendable, Hashable {
    public var tag: String
    public var token: String
    public var outcome: ReceiptOutcome
    public var at: Date?
    /// The service's id of the request it came from, kept only for a status without a tag:
    /// then the request finds its message (`ServiceRequest`).
    public var requestID: String?

    public init(tag: String, token: String, outcome: ReceiptOutcome, at: Date?, requestID: String? = nil) {
        self.tag = tag
        self.token = token
        self.outcome = outcome
        self.at = at
        self.requestID = requestID
    }
}

/// What the receipts of the services that do not sign them share: each
/// entry names its targets in one comma-separated text and gives its numbers (a type, a time in
/// milliseconds) as JSON numbers or as numeric strings, both of which their pages show.
public enum ReceiptFields {
    /// `value` as an integer: a JSON number, or a string holding one; nil otherwise.
    public static func integer(_ value: JSONValue?) -> Int64? {
        value?.intValue ?? value?.stringValue.flatMap { Int64($0) }
    }

    /// `value` as a moment given in milliseconds since 1970 (a number or a numeric string).
    public static func milliseconds(_ value: JSONValue?) -> Date? {
        integer(value).map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }

    /// One receipt per target of `targets` (`"regid1,regid2"`; blanks around a target are
    /// dropped, empty ones skipped), each with the entry's tag, outcome and moment.
    public static func receipts(targets: String, tag: String, outcome: ReceiptOutcome, at: Date?) -> [ServiceReceipt] {
        targets.split(separator: ",").compactMap { target in
            let token = target.trimmingCharacters(in: .whitespaces)
            return token.isEmpty ? nil : ServiceReceipt(tag: tag, token: token, outcome: outcome, at: at)
        }
    }
}

/// How a receipt POST is answered, in the service's shape.
public enum ReceiptAnswer: Sendable {
    /// Read (whatever was recorded: a service retries any other answer).
    case accepted
    /// The signature or a tag did not verify: nothing recorded.
    case unauthorized
    /// Not the service's format.
    case malformed(String)
}

/// A receipt POST's answer: status, content type, body.
public struct ReceiptResponse: Sendable {
    public var status: Int
    public var contentType: String
    public var body: [UInt8]

    public init(status: Int, contentType: String = "application/json", body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }
}

/// The body a receipt POST could not be read from.
public struct ReceiptFormatError: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// A transport's delivery receipts (回执), declared from its folder: how the gateway checks and
/// reads what the service posts to `/receipts/{channel}/{app id}`, and how it answers. The
/// fields a send adds (bi_tag, callback URL and param) are the transport's rendering, made with
/// `TransportContext.receipts`.
public struct ReceiptDeclaration: Sendable {
    /// Whether the service signs its POSTs (`CallbackSignature`): then an unsigned
    /// or wrongly signed POST is refused before its body is read. Every receipt's tag is
    /// verified in any case (the only proof for the services that do not sign).
    public var verifySignature: (@Sendable (ReceiptPost, ReceiptKeys) -> Bool)?
    /// The largest body the service sends (up to 1,000 statuses); past it, 413.
    public var bodyLimit: Int
    /// The POST's statuses. Throws `ReceiptFormatError` for a body not in the service's format.
    public var parse: @Sendable (ReceiptPost) throws(ReceiptFormatError) -> [ServiceReceipt]
    /// For a service whose signature covers the POST's header, not its body: a cheap check of
    /// the body before the answer, returning how many statuses it holds (`ReceiptStatuses.count`);
    /// the body is then kept as posted and `parse`d only by the digest, which counts and logs
    /// one it cannot read (`unreadable`). What it throws is answered 400. nil: the body is
    /// parsed whole before the answer (the services whose statuses' tags are their only proof).
    public var intakeCheck: (@Sendable ([UInt8]) throws(ReceiptFormatError) -> Int)?
    public var answer: @Sendable (ReceiptAnswer) -> ReceiptResponse
    /// What the operator registers in the service's console (nil: the send names the URL
    /// itself), for the console and `tuisong credential show`: given the
    /// receipt URL of the app's channel and, for a service that signs, the app's callback
    /// credentials.
    public var consoleRegistration: (@Sendable (_ url: String, CallbackCredentials?) -> [String: String])?

    /// Whether the service signs its POSTs with the callback credentials of the app's receipt
    /// configuration (every signing service known does, `CallbackSignature`): the gateway keeps a
    /// pair per app for it, hands it to `verifySignature` in `ReceiptPost.callbackCredentials`
    /// and shows it to the operator.
    public var usesCallbackCredentials: Bool { verifySignature != nil }

    public init(
        verifySignature: (@Sendable (ReceiptPost, ReceiptKeys) -> Bool)?, bodyLimit: Int,
        parse: @escaping @Sendable (ReceiptPost) throws(ReceiptFormatError) -> [ServiceReceipt],
        intakeCheck: (@Sendable ([UInt8]) throws(ReceiptFormatError) -> Int)? = nil,
        answer: @escaping @Sendable (ReceiptAnswer) -> ReceiptResponse,
        consoleRegistration: (@Sendable (_ url: String, CallbackCredentials?) -> [String: String])? = nil
    ) {
        self.verifySignature = verifySignature
        self.bodyLimit = bodyLimit
        self.parse = parse
        self.intakeCheck = intakeCheck
        self.answer = answer
        self.consoleRegistration = consoleRegistration
    }
}

/// A receipt signature some services share (one vendor's, used by two transports, so it is the
/// kit's): a header `timestamp=…;nonce=…;value=…`, value = Base64(HMAC-SHA256(callback key,
/// timestamp + nonce + callback user name)). The header's name is the service's wire word, so
/// each transport names it in its folder:
///
///     static let signature = CallbackSignature(header: "x-example-callback-id")
public struct CallbackSignature: Sendable {
    /// The header that carries it, lower-cased (`ReceiptPost.headers`' keys are).
    public let header: String

    public init(header: String) { self.header = header.lowercased() }

    public static func value(timestamp: String, nonce: String, userName: String, key: String) -> String {
        Data(HMAC.sha256(key: Array(key.utf8), message: Array((timestamp + nonce + userName).utf8)))
            .base64EncodedString()
    }

    /// The header's value for a POST signed now (the look-alikes sign as the service does).
    public static func headerValue(
        userName: String, key: String, now: Date, nonce: String = UUID().uuidString.lowercased()
    ) -> String {
        let timestamp = String(Int64(now.timeIntervalSince1970 * 1000))
        return "timestamp=\(timestamp);nonce=\(nonce);value="
            + value(timestamp: timestamp, nonce: nonce, userName: userName, key: key)
    }

    /// Whether `post` carries a header signed with its app's callback credentials of `channel`
    /// (`post.callbackCredentials`, which the gateway looked up for the route's channel).
    public func verify(_ post: ReceiptPost, keys: ReceiptKeys, channel: PushChannel) -> Bool {
        guard let credentials = post.callbackCredentials, let header = post.headers[self.header] else { return false }
        var fields: [Substring: Substring] = [:]
        for part in header.split(separator: ";") {
            guard let eq = part.firstIndex(of: "=") else { continue }
            fields[Self.trimmingBlanks(part[..<eq])] = Self.trimmingBlanks(part[part.index(after: eq)...])
        }
        guard let timestamp = fields["timestamp"], let nonce = fields["nonce"], let value = fields["value"] else {
            return false
        }
        return constantTimeEqual(
            String(value),
            Self.value(
                timestamp: String(timestamp), nonce: String(nonce), userName: credentials.userName,
                key: credentials.key))
    }

    /// `text` without the spaces and tabs around it (a header's parameters may be written
    /// `a=1; b=2`). Done on the bytes: Foundation's `trimmingCharacters` bridges through
    /// `NSString` and was some 40 % of this check's time in a push with a receipt per device.
    static func trimmingBlanks(_ text: Substring) -> Substring {
        func isBlank(_ character: Character) -> Bool { character == " " || character == "\t" }
        guard let first = text.firstIndex(where: { !isBlank($0) }), let last = text.lastIndex(where: { !isBlank($0) })
        else { return text[text.endIndex...] }
        return text[first...last]
    }

    /// `{"errno":"0","errmsg":"success"}` and its refusals, as the services' receipt API expects.
    public static func answer(_ answer: ReceiptAnswer) -> ReceiptResponse {
        switch answer {
        case .accepted: ReceiptResponse(status: 200, body: Array(#"{"errno":"0","errmsg":"success"}"#.utf8))
        case .unauthorized:
            ReceiptResponse(status: 401, body: Array(#"{"errno":"401","errmsg":"signature does not verify"}"#.utf8))
        case .malformed(let message):
            ReceiptResponse(
                status: 400,
                body: JSONValue.object(["errno": "400", "errmsg": .string(message)]).serialized())
        }
    }

    /// What an operator enters in the service's receipt configuration: the callback address,
    /// user name and key.
    public static func registration(channel: PushChannel)
        -> @Sendable (String, CallbackCredentials?) -> [String:
        String]
    {
        { url, credentials in
            var fields = ["url": url]
            if let credentials {
                fields["callback_user_name"] = credentials.userName
                fields["callback_key"] = credentials.key
            }
            return fields
        }
    }
}

/// The receipt token each push of an app that posts its own receipts carries (`App.appReceipts`,
/// issue #42's "the app's own receipts"): a MAC of the delivery (message and device) under the
/// app's key, which the app posts back to `POST /api/v1/receipts` with `arrived` or `clicked`.
/// Each transport puts it where its service carries the app's data (a custom key beside the
/// notification, a data field), named `key`. A push to a token
/// no device registered (a token audience) has no device to name and carries none.
public struct AppReceiptTokens: Sendable {
    /// The custom key or data field that carries the token.
    public static let key = "tuisong_receipt"

    public let keys: ReceiptKeys

    public init(keys: ReceiptKeys) { self.keys = keys }

    /// The token `push` carries, nil when its app does not post its own receipts.
    public func token(for push: OutgoingPush, app: App) -> String? {
        guard app.appReceipts, let messageID = push.headers.messageID, let deviceID = push.deviceID else {
            return nil
        }
        return keys.deliveryToken(appID: app.id, messageID: messageID, deviceID: deviceID)
    }

    /// `content` with the token among its custom keys (what the Android services render as
    /// their data), or as it is without one.
    public static func content(_ content: PushContent, carrying token: String?) -> PushContent {
        guard let token else { return content }
        var carrying = content
        carrying.data[key] = .string(token)
        return carrying
    }
}
