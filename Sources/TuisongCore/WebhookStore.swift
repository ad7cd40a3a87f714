import Foundation

/// What an app server can subscribe to. Per-delivery events (`delivery.*`) reach only the
/// endpoints that name them; the others reach an endpoint that names no events too.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable {
    case messageCompleted = "message.completed"
    case deviceInvalidated = "device.invalidated"
    case deliveryFailed = "delivery.failed"
    case deliveryArrived = "delivery.arrived"
    case deliveryClicked = "delivery.clicked"
    case credentialFailing = "credential.failing"
    /// Sent by `POST /api/v1/webhooks/{id}/test` to that endpoint alone.
    case test = "webhook.test"

    /// One event per delivery: only for endpoints that name it.
    public var isPerDelivery: Bool { rawValue.hasPrefix("delivery.") }

    /// The events an endpoint created without a list receives.
    public static let defaults: [WebhookEventType] = [.messageCompleted, .deviceInvalidated, .credentialFailing]
    /// The events an endpoint may name (the test event is sent on request, never subscribed).
    public static let subscribable: [WebhookEventType] = allCases.filter { $0 != .test }
}

/// An app's webhook endpoint as stored: its secret sealed (the gateway seals and opens it).
public struct WebhookEndpoint: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var url: String
    public var description: String
    public var events: [WebhookEventType]
    public var encryptedSecret: [UInt8]
    /// The secret before the last rotation, still signed with until `previousSecretUntil`.
    public var encryptedPreviousSecret: [UInt8]?
    public var previousSecretUntil: Date?
    /// Set when the endpoint was disabled (410 Gone, five days of failures, or by hand).
    public var disabledAt: Date?
    public var disabledReason: String?
    /// The first failed attempt since the last success; nil while the endpoint answers.
    public var failingSince: Date?
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        id: Int64, appID: Int64, url: String, description: String, events: [WebhookEventType],
        encryptedSecret: [UInt8], encryptedPreviousSecret: [UInt8]? = nil, previousSecretUntil: Date? = nil,
        disabledAt: Date? = nil, disabledReason: String? = nil, failingSince: Date? = nil, createdAt: Date,
        updatedAt: Date
    ) {
        self.id = id
        self.appID = appID
        self.url = url
        self.description = description
        self.events = events
        self.encryptedSecret = encryptedSecret
        self.encryptedPreviousSecret = encryptedPreviousSecret
        self.previousSecretUntil = previousSecretUntil
        self.disabledAt = disabledAt
        self.disabledReason = disabledReason
        self.failingSince = failingSince
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    public var isEnabled: Bool { disabledAt == nil }

    /// Whether events of `type` are written for this endpoint.
    public func receives(_ type: WebhookEventType) -> Bool {
        events.contains(type)
    }
}

/// A webhook endpoint to create.
public struct NewWebhookEndpoint: Sendable, Hashable {
    public var appID: Int64
    public var url: String
    public var description: String
    public var events: [WebhookEventType]
    public var encryptedSecret: [UInt8]

    public init(appID: Int64, url: String, description: String, events: [WebhookEventType], encryptedSecret: [UInt8]) {
        self.appID = appID
        self.url = url
        self.description = description
        self.events = events
        self.encryptedSecret = encryptedSecret
    }
}

/// What a PATCH changes (nil: unchanged).
public struct WebhookEndpointChange: Sendable, Hashable {
    public var url: String?
    public var description: String?
    public var events: [WebhookEventType]?
    /// true enables (clearing the reason and the failure streak), false disables by hand.
    public var enabled: Bool?

    public init(url: String? = nil, description: String? = nil, events: [WebhookEventType]? = nil, enabled: Bool? = nil)
    {
        self.url = url
        self.description = description
        self.events = events
        self.enabled = enabled
    }
}

/// One event to send to one endpoint, claimed from the outbox under a lease.
public struct WebhookDelivery: Sendable, Hashable {
    /// The outbox row.
    public var id: Int64
    public var endpointID: Int64
    public var appID: Int64
    /// `webhook-id`: the same for every endpoint the event went to and on every retry.
    public var eventID: String
    public var type: String
    /// The exact bytes sent (and signed) on every attempt.
    public var body: String
    /// Attempts made before this one.
    public var attempts: Int
    public var createdAt: Date

    public init(
        id: Int64, endpointID: Int64, appID: Int64, eventID: String, type: String, body: String, attempts: Int,
        createdAt: Date
    ) {
        self.id = id
        self.endpointID = endpointID
        self.appID = appID
        self.eventID = eventID
        self.type = type
        self.body = body
        self.attempts = attempts
        self.createdAt = createdAt
    }
}

/// What became of one attempt, to record with the outbox row's next state.
public struct WebhookAttemptResult: Sendable, Hashable {
    public enum Next: Sendable, Hashable {
        /// Answered 2xx: the event is done.
        case delivered
        /// Try again at this moment.
        case retry(at: Date)
        /// No more attempts: kept as failed (for a while) so an operator can resend it.
        case failed
    }

    public var outboxID: Int64
    public var endpointID: Int64
    public var eventID: String
    public var type: String
    public var attemptedAt: Date
    /// The HTTP status; nil when no answer came (refused, timeout, connection error).
    public var status: Int?
    public var latencyMilliseconds: Int64
    /// The first bytes of the answer, or the error.
    public var response: String
    public var next: Next
    /// Disable the endpoint with this reason (410 Gone, failing for five days).
    public var disableEndpoint: String?

    public init(
        outboxID: Int64, endpointID: Int64, eventID: String, type: String, attemptedAt: Date, status: Int?,
        latencyMilliseconds: Int64, response: String, next: Next, disableEndpoint: String? = nil
    ) {
        self.outboxID = outboxID
        self.endpointID = endpointID
        self.eventID = eventID
        self.type = type
        self.attemptedAt = attemptedAt
        self.status = status
        self.latencyMilliseconds = latencyMilliseconds
        self.response = response
        self.next = next
        self.disableEndpoint = disableEndpoint
    }

    public var succeeded: Bool { if case .delivered = next { true } else { false } }
}

/// One recorded attempt, as the console lists an endpoint's recent ones.
public struct WebhookAttempt: Sendable, Hashable {
    public var id: Int64
    public var endpointID: Int64
    public var outboxID: Int64
    public var eventID: String
    public var type: String
    public var attemptedAt: Date
    public var status: Int?
    public var latencyMilliseconds: Int64
    public var response: String

    public init(
        id: Int64, endpointID: Int64, outboxID: Int64, eventID: String, type: String, attemptedAt: Date, status: Int?,
        latencyMilliseconds: Int64, response: String
    ) {
        self.id = id
        self.endpointID = endpointID
        self.outboxID = outboxID
        self.eventID = eventID
        self.type = type
        self.attemptedAt = attemptedAt
        self.status = status
        self.latencyMilliseconds = latencyMilliseconds
        self.response = response
    }
}

/// Webhook endpoints and the outbox of events to send them. Events caused by a state change
/// (a message completed, a device invalidated, a delivery failed, a credential failing) are
/// written by the store in the same transaction as that change; this protocol is what the
/// APIs and the sender use.
public protocol WebhookStore: Sendable {
    /// Throws `.notFound` for an unknown app.
    func createWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint
    /// An app's endpoints (every app's for nil), by id.
    func webhookEndpoints(appID: Int64?) async throws -> [WebhookEndpoint]
    func webhookEndpoint(id: Int64) async throws -> WebhookEndpoint?
    /// nil when there is no such endpoint.
    func updateWebhookEndpoint(id: Int64, _ change: WebhookEndpointChange, at: Date) async throws -> WebhookEndpoint?
    /// Replaces the secret; the old one is kept for signing until `previousUntil`.
    func rotateWebhookSecret(id: Int64, encryptedSecret: [UInt8], previousUntil: Date, at: Date) async throws
        -> WebhookEndpoint?
    /// Deletes the endpoint with its outbox rows and attempts. `false` when there was none.
    func deleteWebhookEndpoint(id: Int64) async throws -> Bool
    /// Writes an event for one endpoint (the test event), due now. Returns the event id.
    func enqueueWebhookEvent(endpointID: Int64, type: WebhookEventType, data: JSONValue, at: Date) async throws
        -> String?
    /// Sends an event again (the console's resend): its outbox row becomes due now, with the
    /// same `webhook-id`. `false` when the row is gone (pruned).
    func resendWebhookEvent(outboxID: Int64, endpointID: Int64, at: Date) async throws -> Bool
    /// Claims due events of enabled endpoints under a lease: rows pending and due whose lease
    /// is free or ended (a dead node's). At most `capacity(endpointID)` rows per endpoint and
    /// `limit` in all; `capacity` says how many more this node may send to the endpoint now.
    func claimWebhookDeliveries(
        owner: String, now: Date, leaseFor: TimeInterval, limit: Int, capacity: @escaping @Sendable (Int64) -> Int
    ) async throws -> [WebhookDelivery]
    /// Records attempts and moves their rows on, in one transaction.
    func recordWebhookAttempts(_ results: [WebhookAttemptResult]) async throws
    /// An endpoint's recent attempts, newest first.
    func webhookAttempts(endpointID: Int64, limit: Int) async throws -> [WebhookAttempt]
    /// Deletes rows delivered before `deliveredBefore`, failed rows older than `failedBefore`,
    /// and attempts beyond the newest `keepAttempts` of each endpoint. Returns how many outbox
    /// rows went.
    func pruneWebhookOutbox(deliveredBefore: Date, failedBefore: Date, keepAttempts: Int) async throws -> Int
    /// Events waiting to be sent (pending rows).
    func webhookOutboxDepth() async throws -> Int
    /// Drops the store's cached view of which apps subscribe to what (another node changed an
    /// endpoint); the next state change reads it again.
    func webhookEndpointsChanged()
}
