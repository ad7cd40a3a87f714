import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongHTTP

/// `POST /api/v1/push` and the message status endpoints of the native API.
struct NativePushAPI: Sendable {
    let engine: DeliveryEngine
    let authenticator: APIKeyAuthenticator
    let clock: any Clock
    /// Where a queued message's wake-up goes to the other nodes; nil: this process only.
    var changes: (any StoreChangeFeed)? = nil
    /// The gateway's transports: each one's options object is read by its declared rule.
    var transports: TransportRegistry = .standard
    /// Where the status's `arrived`/`clicked` come from (nil: no receipt counts shown).
    var receipts: (any ReceiptStore)? = nil

    /// Tokens (or device ids) one push may name. A larger audience is a tag (or several
    /// pushes): a list this long is already 5,000 sends from one request.
    static let maxTokens = 5_000
    /// Room in a push body for everything but its audience list: the notification (its APNs
    /// payload fits 5,120 bytes at most, and JSON's `\u` escapes take 6 bytes for one), the
    /// options and the Android settings.
    static let bodyAllowanceBesidesAudience = 64 << 10
    /// One entry of the longest list: an APNs token's 200 hex digits, its quotes, a comma and a space.
    static let bytesPerAudienceEntry = 200 + 4
    /// The largest body a valid push needs: 1,085,536 bytes. The front door answers 413 to a
    /// longer one before it is read or parsed (a 2 MB alert is refused there, not parsed and
    /// then found too large). A list of Android tokens, opaque and up to 4,096 bytes each, fits
    /// by its bytes: some 5,000 tokens of 160 bytes, fewer very long ones.
    static let bodyLimit = bodyAllowanceBesidesAudience + maxTokens * bytesPerAudienceEntry

    func register(on router: Router) {
        router.add(.POST, "/api/v1/push", bodyLimit: Self.bodyLimit) { request in
            await authenticator.withApp(request) { app in try await push(app, request) }
        }
        router.add(.GET, "/api/v1/messages/{id}") { request in
            await authenticator.withApp(request) { app in try await message(app, request) }
        }
        router.add(.GET, "/api/v1/messages/{id}/deliveries") { request in
            await authenticator.withApp(request) { app in try await deliveries(app, request) }
        }
        router.add(.DELETE, "/api/v1/messages/{id}") { request in
            await authenticator.withApp(request) { app in try await cancel(app, request) }
        }
    }

    /// `DELETE /api/v1/messages/{id}`: a scheduled message (`send_at` in the future) is
    /// cancelled before anything is sent; one already started answers 409.
    private func cancel(_ app: App, _ request: Request) async throws -> Response {
        let id = try messageID(request)
        guard let status = try await engine.status(messageID: id), status.record.appID == app.id else {
            throw NativeAPIError(404, "message_not_found", "no message \(id) in this app")
        }
        guard try await engine.cancel(messageID: id) else {
            throw NativeAPIError(
                409, "not_scheduled",
                "message \(id) is \(status.state): only a message not started yet (scheduled, or queued) can be cancelled"
            )
        }
        return .json(object: ["message_id": id, "state": MessageState.cancelled.rawValue])
    }

    private func push(_ app: App, _ request: Request) async throws -> Response {
        let key = try Self.idempotencyKey(request)
        // A repeat answers its first message, not what its own body would have warned about.
        if let key, let first = try await engine.store.message(appID: app.id, idempotencyKey: key) {
            return Self.accepted(first)
        }
        do {
            let body: [String: JSONValue]
            do {
                body = try request.jsonMembers()
            } catch {
                throw NativeAPIError(httpError: error)
            }
            var job = try NativePushRequest.parse(body, appID: app.id, now: clock.now, transports: transports)
            job.idempotencyKey = key
            let record: MessageRecord
            do {
                try await engine.admit(appID: app.id)
                record = try await engine.submit(job)
                if record.state == .queued, changes?.announcesQueuedMessages == false { await changes?.publish(.wake) }
            } catch let error as PayloadError {
                throw NativeAPIError(
                    400, error.code == .tooLarge ? "notification_too_large" : "invalid_notification", error.message)
            }
            let empty = (try? await AudienceCheck.isEmpty(job, store: engine.store)) ?? false
            return Self.accepted(record, warnings: empty ? ["audience_empty"] : [])
        } catch let error as NativeAPIError where (400..<500).contains(error.status) {
            // A repeat answers its first message whatever its body: a retry that differs (a
            // new timestamp in the payload, say) is still the same send.
            if let key, let first = try await engine.store.message(appID: app.id, idempotencyKey: key) {
                return Self.accepted(first)
            }
            throw error
        }
    }

    private static func accepted(_ record: MessageRecord, warnings: [String] = []) -> Response {
        var object: [String: JSONValue] = ["message_id": .int(record.id), "state": .string(record.state.rawValue)]
        if !warnings.isEmpty { object["warnings"] = .array(warnings.map(JSONValue.string)) }
        return .json(JSONValue.object(object), status: 202)
    }

    /// The request's `Idempotency-Key`, if it sent one: a repeat within 24 hours answers the
    /// first request's message (see `IdempotencyKey`).
    static func idempotencyKey(_ request: Request) throws -> String? {
        let values = request.headers.values(for: "Idempotency-Key")
        // RFC 9110 §5.5: whitespace around a field value is not part of it (`k` and `k  ` are
        // one key); libmicrohttpd drops only what leads.
        guard let key = values.first?.trimmingCharacters(in: CharacterSet(charactersIn: " \t")) else { return nil }
        guard values.count == 1, IdempotencyKey.isValid(key) else {
            throw NativeAPIError(
                400, "invalid_request",
                "Idempotency-Key must be one header of 1–\(IdempotencyKey.maxLength) printable ASCII characters")
        }
        return key
    }

    private func messageID(_ request: Request) throws -> Int64 {
        guard let raw = request.pathParameters["id"], let id = Int64(raw), id > 0 else {
            throw NativeAPIError(400, "invalid_message_id", "a message id is a positive integer")
        }
        return id
    }

    private func message(_ app: App, _ request: Request) async throws -> Response {
        let id = try messageID(request)
        guard let status = try await engine.status(messageID: id), status.record.appID == app.id else {
            throw NativeAPIError(404, "message_not_found", "no message \(id) in this app")
        }
        var fields = MessageView.fields(status)
        let receipts = try await self.receipts?.receiptCounts(messageID: id) ?? [:]
        MessageView.addReceipts(receipts, to: &fields)
        if let waiting = try await self.receipts?.waitingReceiptStatuses(appID: app.id) {
            // The counts follow the receipts by the digest's lag: what is answered and not yet counted.
            fields["receipts_waiting"] = .int(Int64(waiting))
        }
        // Per channel only when asked: the status route is what pollers call 100 times a second.
        if request.query["channels"] == "true" {
            fields["channels"] = .object(
                MessageView.channels(
                    try await engine.store.channelCounts(messageID: id), receipts: receipts,
                    reporting: transports.reportingArrival))
        }
        // JSONValue's writer, not JSONSerialization: this is the route pollers call 100 times a
        // second, and Foundation's sorted-key serialisation was a third of its cost.
        return jsonResponse(.object(fields))
    }

    private func deliveries(_ app: App, _ request: Request) async throws -> Response {
        let id = try messageID(request)
        guard let record = try await engine.store.message(id: id), record.appID == app.id else {
            throw NativeAPIError(404, "message_not_found", "no message \(id) in this app")
        }
        var state: DeliveryState?
        if let raw = request.query["state"], !raw.isEmpty {
            guard let parsed = DeliveryState(rawValue: raw) else {
                throw NativeAPIError(
                    400, "invalid_state",
                    "state must be one of \(DeliveryState.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            state = parsed
        }
        var limit = 100
        if let raw = request.query["limit"] {
            guard let value = Int(raw), (1...1000).contains(value) else {
                throw NativeAPIError(400, "invalid_limit", "limit must be an integer 1–1000")
            }
            limit = value
        }
        let page: Page<DeliveryRecord>
        do {
            page = try await engine.store.deliveries(
                messageID: id, state: state, cursor: request.query["cursor"].flatMap { $0.isEmpty ? nil : $0 },
                limit: limit)
        } catch let error as StoreError where error.code == .invalidCursor {
            throw NativeAPIError(400, "invalid_cursor", "cursor is not one this API returned")
        }
        // What each listed delivery's receipts said (keyed by message and token, as recorded).
        let receipts = try await self.receipts?.receiptStates(messageID: id, tokens: page.items.map(\.token)) ?? [:]
        return .json(object: [
            "deliveries": page.items.map { MessageView.delivery($0, receipt: receipts[$0.token]) },
            "next_cursor": page.nextCursor as Any? ?? NSNull(),
        ])
    }
}

/// How the native API shows messages and deliveries.
enum MessageView {
    /// The one definition of a message's view; `object` is the same for `JSONSerialization`.
    static func fields(_ status: MessageStatus) -> [String: JSONValue] {
        let r = status.record
        func optional(_ value: String?) -> JSONValue { value.map(JSONValue.string) ?? .null }
        var object: [String: JSONValue] = [
            "id": .int(r.id),
            // `completed` only once nothing is queued, sending or held (`MessageStatus.state`).
            "state": .string(status.state),
            "vendor": .string(r.vendor),
            "audience": .string(r.audience.summary),
            "push_type": .string(r.options.pushType.rawValue),
            "counts": .object(counts(status.counts).mapValues { .int(Int64($0)) }),
            "failures": .object(status.failures.mapValues { .int(Int64($0)) }),
            "skips": .object(status.skips.mapValues { .int(Int64($0)) }),
            "created_at": .string(ISO8601.string(r.createdAt)),
            "total": r.total.map { .int(Int64($0)) } ?? .null,
            "started_at": optional(r.startedAt.map(ISO8601.string)),
            "completed_at": optional(status.completedAt.map(ISO8601.string)),
        ]
        if !status.pending.isEmpty { object["waiting_for"] = .array(status.pending.map(waiting)) }
        if let sendAt = r.sendAt { object["send_at"] = .string(ISO8601.string(sendAt)) }
        if let vendorID = r.vendorMessageID { object["vendor_message_id"] = .string(vendorID) }
        return object
    }

    /// One kind of unfinished delivery: `{"state": "held", "reason": "no_credential", "count": 1,
    /// "until": "…"}`; `until` is when queued rows are next due (a daily quota: the service's
    /// next day) or when held rows expire with the message.
    static func waiting(_ p: PendingDeliveries) -> JSONValue {
        .object([
            "state": .string(p.state.rawValue), "reason": p.reason.map(JSONValue.string) ?? .null,
            "count": .int(Int64(p.count)), "until": p.until.map { .string(ISO8601.string($0)) } ?? .null,
        ])
    }

    static func object(_ status: MessageStatus) -> [String: Any] {
        fields(status).mapValues(\.jsonObject)
    }

    /// Committed counts per push service: `{"<channel>": {"delivered": …}, …}`; with
    /// receipts, `arrived` and `clicked` beside them (0 on a channel whose service reports
    /// arrival, absent on one whose service reports none, unless the app posts its own).
    static func channels(
        _ counts: [PushChannel: DeliveryCounts], receipts: [PushChannel: ReceiptCounts] = [:],
        reporting: Set<PushChannel> = []
    ) -> [String: JSONValue] {
        var result: [String: JSONValue] = [:]
        for channel in Set(counts.keys).union(receipts.keys) {
            var object = Self.counts(counts[channel] ?? DeliveryCounts()).mapValues { JSONValue.int(Int64($0)) }
            if let r = receipts[channel] ?? (reporting.contains(channel) ? ReceiptCounts() : nil) {
                object["arrived"] = .int(Int64(r.arrived))
                object["clicked"] = .int(Int64(r.clicked))
                if !r.reasons.isEmpty { object["not_shown"] = .object(r.reasons.mapValues { .int(Int64($0)) }) }
            }
            result[channel.rawValue] = .object(object)
        }
        return result
    }

    /// `counts.arrived` and `counts.clicked` (summed over the channels), and why phones did not
    /// show it (`not_shown`, by reason), from the message's receipts.
    static func addReceipts(_ receipts: [PushChannel: ReceiptCounts], to fields: inout [String: JSONValue]) {
        let total = receipts.values.reduce(ReceiptCounts(), +)
        if case .object(var counts)? = fields["counts"] {
            counts["arrived"] = .int(Int64(total.arrived))
            counts["clicked"] = .int(Int64(total.clicked))
            fields["counts"] = .object(counts)
        }
        if !total.reasons.isEmpty { fields["not_shown"] = .object(total.reasons.mapValues { .int(Int64($0)) }) }
    }

    static func counts(_ c: DeliveryCounts) -> [String: Int] {
        var result: [String: Int] = [:]
        for state in DeliveryState.allCases { result[state.rawValue] = c[state] }
        return result
    }

    /// One delivery as listed; `receipt`: what its receipts said (arrived, clicked, or why the
    /// phone did not show it), null while none came.
    static func delivery(_ d: DeliveryRecord, receipt: DeliveryReceiptState? = nil) -> [String: Any] {
        [
            "token": d.token,
            "channel": d.channel.rawValue,
            "environment": d.environment.rawValue,
            "state": d.state.rawValue,
            "reason": d.reason as Any? ?? NSNull(),
            "service_message_id": d.serviceMessageID as Any? ?? NSNull(),
            // The same value, as clients written when APNs was the only service read it.
            "apns_id": d.serviceMessageID as Any? ?? NSNull(),
            "attempts": d.attempts,
            "next_attempt_at": d.nextAttemptAt.map(ISO8601.string) as Any? ?? NSNull(),
            "updated_at": ISO8601.string(d.updatedAt),
            "receipt": receipt.map { receipt -> Any in
                [
                    "arrived_at": receipt.arrivedAt.map(ISO8601.string) as Any? ?? NSNull(),
                    "clicked_at": receipt.clickedAt.map(ISO8601.string) as Any? ?? NSNull(),
                    "reason": receipt.reason as Any? ?? NSNull(),
                ]
            } ?? NSNull(),
        ]
    }
}
