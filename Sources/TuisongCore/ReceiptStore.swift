import Foundation

/// What a delivery receipt (回执) says became of a push on the phone.
public enum ReceiptOutcome: Sendable, Hashable {
    /// The phone got it (a service's "delivered" status, an app's own `arrived`).
    case arrived
    /// The user opened it. A click implies arrival: an arrival not yet recorded is recorded with it.
    case clicked
    /// The service did not show it, for `reason` (`notifications_disabled`, `replaced`,
    /// `frequency_capped`, `held_by_service`, `uninstalled`, …). `invalidatesDevice`: the token
    /// no longer reaches the app (uninstalled, another user, inactive), and the device is
    /// invalidated as when a service reports the token gone.
    case notShown(reason: String, invalidatesDevice: Bool)

    /// The name counted and shown: `arrived`, `clicked`, or the reason.
    public var name: String {
        switch self {
        case .arrived: "arrived"
        case .clicked: "clicked"
        case .notShown(let reason, _): reason
        }
    }
}

/// One push's receipt: the message Tuisong sent (from the tag it put in the send), the device's
/// token on the service, and what happened when.
public struct DeliveryReceipt: Sendable, Hashable {
    public var messageID: Int64
    public var token: String
    public var channel: PushChannel
    public var outcome: ReceiptOutcome
    /// When the service says it happened (its timestamp), else when the receipt came.
    public var at: Date

    public init(messageID: Int64, token: String, channel: PushChannel, outcome: ReceiptOutcome, at: Date) {
        self.messageID = messageID
        self.token = token
        self.channel = channel
        self.outcome = outcome
        self.at = at
    }
}

/// One POST's receipts, of one app, as `ReceiptStore.recordReceipts(posts:)` takes them.
public struct ReceiptPostReceipts: Sendable {
    public var appID: Int64
    public var receipts: [DeliveryReceipt]

    public init(appID: Int64, receipts: [DeliveryReceipt]) {
        self.appID = appID
        self.receipts = receipts
    }
}

/// What recording a batch of receipts changed.
public struct ReceiptRecording: Sendable, Hashable {
    /// The receipts that changed a delivery's state, in the order given (a click that also
    /// recorded the arrival appears as an `arrived` receipt, then the click): the point where
    /// events such as `delivery.arrived` hook in.
    public var recorded: [DeliveryReceipt]
    /// Receipts already counted for their delivery (a service's retry, a replay).
    public var repeated: Int
    /// Receipts naming a message this app does not have (deleted, another app's, forged).
    public var unknown: Int
    /// Devices invalidated by their receipt (uninstalled, another user, inactive).
    public var invalidatedDevices: Int

    public init(recorded: [DeliveryReceipt] = [], repeated: Int = 0, unknown: Int = 0, invalidatedDevices: Int = 0) {
        self.recorded = recorded
        self.repeated = repeated
        self.unknown = unknown
        self.invalidatedDevices = invalidatedDevices
    }
}

/// A message's receipts on one channel: how many phones showed it, how many users opened it,
/// and why the others did not, by reason.
public struct ReceiptCounts: Sendable, Hashable {
    public var arrived = 0
    public var clicked = 0
    public var reasons: [String: Int] = [:]

    public init(arrived: Int = 0, clicked: Int = 0, reasons: [String: Int] = [:]) {
        self.arrived = arrived
        self.clicked = clicked
        self.reasons = reasons
    }

    public static func + (a: ReceiptCounts, b: ReceiptCounts) -> ReceiptCounts {
        ReceiptCounts(
            arrived: a.arrived + b.arrived, clicked: a.clicked + b.clicked,
            reasons: a.reasons.merging(b.reasons, uniquingKeysWith: +))
    }
}

/// One delivery's receipt state, for the deliveries listing.
public struct DeliveryReceiptState: Sendable, Hashable {
    public var arrivedAt: Date?
    public var clickedAt: Date?
    public var reason: String?

    public init(arrivedAt: Date?, clickedAt: Date?, reason: String?) {
        self.arrivedAt = arrivedAt
        self.clickedAt = clickedAt
        self.reason = reason
    }
}

/// A request a push service accepted for a message, by the id it answered with (Huawei's
/// `requestId`): kept with the message (deleted with it) so a receipt status that names the
/// request and not Tuisong's tag finds the message, and through it the delivery by its token.
public struct ServiceRequest: Sendable, Hashable {
    public var channel: PushChannel
    public var requestID: String

    public init(channel: PushChannel, requestID: String) {
        self.channel = channel
        self.requestID = requestID
    }
}

/// Delivery receipts, recorded idempotently beside the send's outcome. A receipt is keyed by
/// (message, token), not by a delivery row (a push delivered on its first attempt leaves no
/// row), so one that comes before the send's flush is committed is kept like any other.
public protocol ReceiptStore: Sendable {
    /// Records what is new in `receipts` of `appID`'s messages in one transaction: a delivery's
    /// arrival, click and reason each count once however often they are repeated; a receipt of
    /// a message the app does not have is counted `unknown` and kept nowhere; a device whose
    /// receipt says its token is gone is invalidated (unless it registered again since).
    func recordReceipts(appID: Int64, _ receipts: [DeliveryReceipt]) async throws -> ReceiptRecording
    /// Records several POSTs' receipts (`ReceiptPostReceipts`, each as `recordReceipts(appID:_:)`
    /// would) in one transaction, each under a savepoint of its own: one result per POST, in
    /// order; a POST whose write fails is rolled back alone and fails alone. Throws, recording
    /// none, when the transaction cannot commit. Meant for a database with one writer (SQLite):
    /// where writers run side by side (PostgreSQL) each POST takes its rows' locks in key order
    /// within its own transaction, and one transaction holding several POSTs' locks would not.
    func recordReceipts(posts: [ReceiptPostReceipts]) async throws -> [Result<ReceiptRecording, any Error>]
    /// The message's receipt counts by channel.
    func receiptCounts(messageID: Int64) async throws -> [PushChannel: ReceiptCounts]
    /// The receipt state of the message's deliveries to `tokens` (those with a receipt).
    func receiptStates(messageID: Int64, tokens: [String]) async throws -> [String: DeliveryReceiptState]
    /// Records a request to many tokens that asks for receipts by one `param`,
    /// before it is sent; returns its id, which the param names.
    func recordReceiptSend(_ send: ReceiptSend) async throws -> Int64
    /// The recorded request `id`, nil when there is none (deleted with its message).
    func receiptSend(id: Int64) async throws -> ReceiptSend?
    /// The message of `appID`'s that `channel`'s service accepted the request `requestID` for
    /// (`MessageProgress.serviceRequests`); nil when none of the app's messages has it.
    func serviceRequestMessage(appID: Int64, channel: PushChannel, requestID: String) async throws -> Int64?

    /// Keeps verified receipt POSTs, one row each, until they are digested: committed when it
    /// returns, so a POST is answered only once it is durable.
    func enqueueReceiptPosts(_ posts: [ReceiptInboxPost]) async throws
    /// Up to `limit` POSTs waiting to be digested, oldest first (`id` set).
    func receiptInbox(limit: Int) async throws -> [ReceiptInboxPost]
    /// Records each digested POST's receipts as `recordReceipts(appID:_:)` would and deletes its
    /// inbox row, both in one transaction, each POST under a savepoint of its own: one result
    /// per POST, in order; nil for a POST whose row is gone or taken by another node this
    /// moment (`FOR UPDATE SKIP LOCKED` on PostgreSQL), which records nothing. A POST whose write
    /// fails is rolled back alone (its row stays) and fails alone.
    func digestReceiptPosts(_ posts: [DigestedReceiptPost]) async throws -> [Result<ReceiptRecording, any Error>?]
    /// Statuses waiting to be digested: the app's, or every app's for nil.
    func waitingReceiptStatuses(appID: Int64?) async throws -> Int
}

/// One receipt POST as a service sent it, verified and kept until it is digested.
public struct ReceiptInboxPost: Sendable, Hashable {
    /// The inbox row's id (0 before it is stored).
    public var id: Int64
    public var channel: PushChannel
    public var appID: Int64
    public var receivedAt: Date
    /// How many statuses it holds, for the waiting counts and the digest's batches.
    public var statuses: Int
    public var body: [UInt8]

    public init(id: Int64 = 0, channel: PushChannel, appID: Int64, receivedAt: Date, statuses: Int, body: [UInt8]) {
        self.id = id
        self.channel = channel
        self.appID = appID
        self.receivedAt = receivedAt
        self.statuses = statuses
        self.body = body
    }
}

/// An inbox POST read into its receipts, as `ReceiptStore.digestReceiptPosts` records them.
public struct DigestedReceiptPost: Sendable {
    public var inboxID: Int64
    public var appID: Int64
    public var receipts: [DeliveryReceipt]

    public init(inboxID: Int64, appID: Int64, receipts: [DeliveryReceipt]) {
        self.inboxID = inboxID
        self.appID = appID
        self.receipts = receipts
    }
}

/// One request to many device tokens that asked a service for receipts by one `param`: the
/// message it sent and its tokens, kept as digests (the transports' kit makes them), so a
/// receipt naming this request is taken only for the tokens it was sent to.
public struct ReceiptSend: Sendable, Hashable {
    public var appID: Int64
    public var messageID: Int64
    public var channel: PushChannel
    /// A short digest of each token the request was sent to.
    public var tokenDigests: Set<String>

    public init(appID: Int64, messageID: Int64, channel: PushChannel, tokenDigests: Set<String>) {
        self.appID = appID
        self.messageID = messageID
        self.channel = channel
        self.tokenDigests = tokenDigests
    }
}

/// The callback user name and key of an app's receipt configuration with one service, as the
/// operator enters them in the service's console: the service signs each receipt POST with
/// them. The key is stored sealed; the
/// gateway seals and opens it.
public struct ReceiptCallbackCredential: Sendable, Hashable {
    public var appID: Int64
    public var channel: PushChannel
    public var userName: String
    public var encryptedKey: [UInt8]
    public var updatedAt: Date

    public init(appID: Int64, channel: PushChannel, userName: String, encryptedKey: [UInt8], updatedAt: Date) {
        self.appID = appID
        self.channel = channel
        self.userName = userName
        self.encryptedKey = encryptedKey
        self.updatedAt = updatedAt
    }
}

/// An app's stored callback credentials, and whether the app is older than stored ones: its
/// credentials were derived from the master key then, and an operator may have registered
/// those, so its first credential of a service is the derived one rather than a new key.
public struct ReceiptCallbackCredentials: Sendable, Hashable {
    public var byChannel: [PushChannel: ReceiptCallbackCredential]
    public var predatesStoredCredentials: Bool

    public init(byChannel: [PushChannel: ReceiptCallbackCredential] = [:], predatesStoredCredentials: Bool = false) {
        self.byChannel = byChannel
        self.predatesStoredCredentials = predatesStoredCredentials
    }
}

/// The apps' callback credentials per service (whether an app posts its own receipts is
/// `App.appReceipts`).
public protocol ReceiptSettingsStore: Sendable {
    /// The app's callback credentials.
    func receiptCallbackCredentials(appID: Int64) async throws -> ReceiptCallbackCredentials
    /// Stores `credential` unless the app has one for its channel already (another node made it
    /// first); returns the one stored. Throws `StoreError.notFound` for an app that is gone.
    func addReceiptCallbackCredential(_ credential: ReceiptCallbackCredential) async throws
        -> ReceiptCallbackCredential
    /// Puts `credential` in place of the app's one for its channel (a rotation, or what the
    /// operator typed into the service's console). Throws `StoreError.notFound` for an app that is gone.
    func replaceReceiptCallbackCredential(_ credential: ReceiptCallbackCredential) async throws
}
