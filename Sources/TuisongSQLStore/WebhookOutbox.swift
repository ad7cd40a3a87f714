import Foundation
import Synchronization
import TuisongCore

/// Which apps' endpoints receive which events, as the store's writers consult it inside their
/// transactions: an app with no endpoint for an event pays nothing for it (a million-device
/// fan-out with no `delivery.failed` subscriber writes no event and reads nothing more).
///
/// Read from the database inside the transaction that needs it when it is stale: after this
/// node changed an endpoint (the shared writes below call `changed()`), after another node did
/// (`WebhookStore.webhookEndpointsChanged`, from the change feed), and every few seconds in
/// case a change was missed.
public final class WebhookSubscriptions: Sendable {
    package struct Endpoint: Sendable, Hashable {
        package var id: Int64
        package var events: Set<WebhookEventType>
    }

    private struct State {
        var byApp: [Int64: [Endpoint]] = [:]
        /// Every event type some enabled endpoint receives.
        var anyReceives: Set<WebhookEventType> = []
        var loadedAt: UInt64 = 0
        var stale = true
    }

    /// How long a snapshot is trusted without a change notice.
    static let refreshNanoseconds: UInt64 = 5_000_000_000

    private let state = Mutex(State())

    public init() {}

    package func changed() { state.withLock { $0.stale = true } }

    /// The endpoints of `appID` that receive `type`, reading the subscriptions in `db` first
    /// when they are stale.
    package func endpoints(_ db: any SQLExecutor, appID: Int64, receiving type: WebhookEventType) throws -> [Int64] {
        try refreshIfNeeded(db)
        return state.withLock { state in
            (state.byApp[appID] ?? []).filter { $0.events.contains(type) }.map(\.id)
        }
    }

    /// Whether any app's endpoint receives `type` (so a writer need not look up a row's app).
    package func anyReceives(_ db: any SQLExecutor, _ type: WebhookEventType) throws -> Bool {
        try refreshIfNeeded(db)
        return state.withLock { $0.anyReceives.contains(type) }
    }

    private func refreshIfNeeded(_ db: any SQLExecutor) throws {
        let now = DispatchTime.now().uptimeNanoseconds
        let due = state.withLock { $0.stale || now &- $0.loadedAt > Self.refreshNanoseconds }
        guard due else { return }
        var byApp: [Int64: [Endpoint]] = [:]
        var any: Set<WebhookEventType> = []
        for row in try db.fetchAll("SELECT id, app_id, events FROM webhook_endpoints WHERE disabled_at IS NULL") {
            let events = Set(WebhookEndpointRows.events(row.string(2)))
            byApp[row.int64(1), default: []].append(Endpoint(id: row.int64(0), events: events))
            any.formUnion(events)
        }
        state.withLock { state in
            state.byApp = byApp
            state.anyReceives = any
            state.loadedAt = now
            state.stale = false
        }
    }
}

/// The outbox writes every state change that causes an event makes in its own transaction.
/// Each backend calls these from its writes (SQLite on GRDB through `GRDBExecutor`, PostgreSQL
/// through its executor), so an event is committed with its cause or not at all.
public struct WebhookOutbox: Sendable {
    package let subscriptions: WebhookSubscriptions

    public init(subscriptions: WebhookSubscriptions) {
        self.subscriptions = subscriptions
    }

    /// Whether any endpoint receives `type`: the writers' first, cheapest question.
    package func anyReceives(_ db: any SQLExecutor, _ type: WebhookEventType) throws -> Bool {
        try subscriptions.anyReceives(db, type)
    }

    /// A new `webhook-id`: `msg_` and 24 random base62 characters (the form Standard Webhooks'
    /// examples use).
    package static func newEventID() -> String {
        // Random bytes eight at a time (each draw of the system generator is a system call; a
        // push with a failure per hundred devices writes thousands of ids), a byte below 248
        // (4 x 62) making one unbiased character.
        var generator = SystemRandomNumberGenerator()
        var id = "msg_"
        var count = 0
        while count < 24 {
            var word = generator.next() as UInt64
            for _ in 0..<8 where count < 24 {
                let byte = UInt8(truncatingIfNeeded: word)
                word >>= 8
                guard byte < 248 else { continue }
                id.unicodeScalars.append(eventIDAlphabet[Int(byte % 62)])
                count += 1
            }
        }
        return id
    }

    private static let eventIDAlphabet = Array(
        "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz".unicodeScalars)

    /// `{"type","timestamp","data"}`, the body sent and signed on every attempt.
    package static func body(type: WebhookEventType, at now: Int64, data: JSONValue) -> String {
        JSONValue.object([
            "type": .string(type.rawValue), "timestamp": .string(RFC3339.string(SQLTime.date(now))), "data": data,
        ]).serializedString
    }

    /// Writes the event for each of the app's endpoints that receive it. `key`, when given,
    /// writes it at most once per endpoint (a message completes once, whichever write notices).
    /// Returns the event id, nil when no endpoint receives it.
    @discardableResult
    package func enqueue(
        _ db: any SQLExecutor, appID: Int64, type: WebhookEventType, data: JSONValue, now: Int64, key: String? = nil
    ) throws -> String? {
        let endpoints = try subscriptions.endpoints(db, appID: appID, receiving: type)
        guard !endpoints.isEmpty else { return nil }
        let eventID = Self.newEventID()
        let body = Self.body(type: type, at: now, data: data)
        for endpoint in endpoints {
            try Self.insert(
                db, endpointID: endpoint, appID: appID, eventID: eventID, type: type, body: body, now: now,
                key: key ?? eventID)
        }
        return eventID
    }

    package static func insert(
        _ db: any SQLExecutor, endpointID: Int64, appID: Int64, eventID: String, type: WebhookEventType, body: String,
        now: Int64, key: String
    ) throws {
        try db.run(
            """
            INSERT INTO webhook_outbox (endpoint_id, app_id, event_id, event_key, type, body, state, attempts,
                next_attempt_at, created_at, updated_at)
            VALUES (\(endpointID), \(appID), \(eventID), \(key), \(type.rawValue), \(body), 'pending', 0, \(now),
                \(now), \(now))
            ON CONFLICT (endpoint_id, event_key) DO NOTHING
            """)
    }

    // MARK: the events

    /// `message.completed` for each of `messageIDs` that has completed (its `completed_at`
    /// set): written once per endpoint however many writes see it complete.
    package func messagesCompleted(_ db: any SQLExecutor, _ messageIDs: [Int64], now: Int64) throws {
        guard !messageIDs.isEmpty, try anyReceives(db, .messageCompleted) else { return }
        let d = db.dialect
        // PostgreSQL's sum() of BIGINTs is NUMERIC: each counter is cast back.
        for id in messageIDs {
            guard
                let row = try db.fetchOne(
                    """
                    SELECT app_id, state, total, CAST(\(raw: d.messageCounter("delivered")) AS BIGINT),
                        CAST(\(raw: d.messageCounter("failed")) AS BIGINT),
                        CAST(\(raw: d.messageCounter("skipped")) AS BIGINT), completed_at
                    FROM messages WHERE id = \(id) AND completed_at IS NOT NULL
                    """)
            else { continue }
            let appID = row.int64(0)
            guard try !subscriptions.endpoints(db, appID: appID, receiving: .messageCompleted).isEmpty else { continue }
            var channels: [String: JSONValue] = [:]
            for (channel, counts) in try MessageChannelCounts.read(db, messageID: id) {
                channels[channel.rawValue] = .object([
                    "delivered": .int(Int64(counts.delivered)), "failed": .int(Int64(counts.failed)),
                    "skipped": .int(Int64(counts.skipped)),
                ])
            }
            let data: JSONValue = .object([
                "message_id": .int(id), "state": .string(row.string(1)),
                "total": row.isNull(2) ? .null : .int(row.int64(2)),
                "counts": .object([
                    "delivered": .int(row.int64(3)), "failed": .int(row.int64(4)), "skipped": .int(row.int64(5)),
                ]),
                "channels": .object(channels),
                "completed_at": .string(RFC3339.string(SQLTime.date(row.int64(6)))),
            ])
            try enqueue(db, appID: appID, type: .messageCompleted, data: data, now: now, key: "message.completed:\(id)")
        }
    }

    /// `device.invalidated` for a device the caller has just invalidated.
    package func deviceInvalidated(_ db: any SQLExecutor, deviceID: Int64, reason: String, now: Int64) throws {
        guard try anyReceives(db, .deviceInvalidated),
            let row = try db.fetchOne("SELECT app_id, token, channel FROM devices WHERE id = \(deviceID)")
        else { return }
        try enqueue(
            db, appID: row.int64(0), type: .deviceInvalidated,
            data: .object([
                "device_id": .int(deviceID), "token": .string(row.string(1)), "channel": .string(row.string(2)),
                "reason": .string(reason),
            ]), now: now)
    }

    /// The app of a message, for per-delivery events (nil: the message is gone).
    package static func appID(_ db: any SQLExecutor, messageID: Int64) throws -> Int64? {
        try db.fetchOne("SELECT app_id FROM messages WHERE id = \(messageID)")?.int64(0)
    }

    /// `delivery.failed` for one delivery that failed for good.
    package func deliveryFailed(
        _ db: any SQLExecutor, appID: Int64, messageID: Int64, token: String, channel: String, reason: String?,
        now: Int64
    ) throws {
        try enqueue(
            db, appID: appID, type: .deliveryFailed,
            data: .object([
                "message_id": .int(messageID), "token": .string(token), "channel": .string(channel),
                "reason": reason.map(JSONValue.string) ?? .null,
            ]), now: now)
    }

    /// `delivery.failed` for a flush's failed rows, when an endpoint of any app asks for it.
    package func deliveriesFailed(_ db: any SQLExecutor, messageID: Int64, _ deliveries: [NewDelivery], now: Int64)
        throws
    {
        let failed = deliveries.filter { $0.state == .failed }
        guard !failed.isEmpty, try anyReceives(db, .deliveryFailed),
            let appID = try Self.appID(db, messageID: messageID)
        else { return }
        for d in failed {
            try deliveryFailed(
                db, appID: appID, messageID: messageID, token: d.token, channel: d.channel.rawValue, reason: d.reason,
                now: now)
        }
    }

    /// `delivery.failed` for retried rows that have just failed for good (by id).
    package func deliveryRowsFailed(_ db: any SQLExecutor, _ ids: [Int64], now: Int64) throws {
        guard !ids.isEmpty, try anyReceives(db, .deliveryFailed) else { return }
        for id in ids {
            guard
                let row = try db.fetchOne(
                    """
                    SELECT m.app_id, d.message_id, d.token, d.channel, d.reason
                    FROM deliveries d JOIN messages m ON m.id = d.message_id WHERE d.id = \(id)
                    """)
            else { continue }
            try deliveryFailed(
                db, appID: row.int64(0), messageID: row.int64(1), token: row.string(2), channel: row.string(3),
                reason: row.optionalString(4), now: now)
        }
    }

    /// `delivery.arrived` / `delivery.clicked` for receipts that have just changed their
    /// delivery (`ReceiptRecording.recorded`): a repeated receipt is not among them, so it
    /// writes nothing. `data.at` is when the service says it happened.
    package func receiptsRecorded(_ db: any SQLExecutor, appID: Int64, _ receipts: [DeliveryReceipt], now: Int64)
        throws
    {
        // Asked once a call, not once a receipt (a POST holds up to 1,000).
        let arrivals = try anyReceives(db, .deliveryArrived)
        let clicks = try anyReceives(db, .deliveryClicked)
        guard arrivals || clicks else { return }
        for receipt in receipts {
            let type: WebhookEventType
            switch receipt.outcome {
            case .arrived where arrivals: type = .deliveryArrived
            case .clicked where clicks: type = .deliveryClicked
            case .arrived, .clicked, .notShown: continue
            }
            try enqueue(
                db, appID: appID, type: type,
                data: .object([
                    "message_id": .int(receipt.messageID), "token": .string(receipt.token),
                    "channel": .string(receipt.channel.rawValue), "at": .string(RFC3339.string(receipt.at)),
                ]), now: now)
        }
    }

    /// `credential.failing` when a credential has just become failing.
    package func credentialFailing(
        _ db: any SQLExecutor, appID: Int64, credentialID: Int64, channel: String, reason: String?, now: Int64
    ) throws {
        guard try anyReceives(db, .credentialFailing) else { return }
        try enqueue(
            db, appID: appID, type: .credentialFailing,
            data: .object([
                "credential_id": .int(credentialID), "channel": .string(channel),
                "reason": reason.map(JSONValue.string) ?? .null,
            ]), now: now)
    }
}

/// A message's committed outcomes per push service (`MessageStore.channelCounts`), inside any
/// read or write.
package enum MessageChannelCounts {
    package static func read(_ db: any SQLExecutor, messageID: Int64) throws -> [PushChannel: DeliveryCounts] {
        var counts: [PushChannel: DeliveryCounts] = [:]
        // Summed: PostgreSQL keeps a row per slice.
        for row in try db.fetchAll(
            """
            SELECT channel, CAST(sum(delivered) AS BIGINT) FROM message_channel_deliveries
            WHERE message_id = \(messageID) GROUP BY channel
            """)
        {
            guard let channel = PushChannel(rawValue: row.string(0)) else { continue }
            counts[channel, default: DeliveryCounts()].delivered += Int(row.int64(1))
        }
        for row in try db.fetchAll(
            """
            SELECT channel, state, count(*) FROM deliveries
            WHERE message_id = \(messageID) AND (reason IS NULL OR reason <> 'UnknownDevice') GROUP BY channel, state
            """)
        {
            guard let channel = PushChannel(rawValue: row.string(0)),
                let state = DeliveryState(rawValue: row.string(1))
            else { continue }
            counts[channel, default: DeliveryCounts()][state] += Int(row.int64(2))
        }
        return counts
    }
}

/// RFC 3339 times in UTC with milliseconds, as event bodies carry them.
package enum RFC3339 {
    package static func string(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
