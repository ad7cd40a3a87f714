import Foundation
import TuisongCore

// WebhookStore, written once: endpoints, the outbox claim under a lease (rows several nodes
// share out with the dialect's SKIP LOCKED), attempts and pruning.
extension SQLStoreBackend {
    public func createWebhookEndpoint(_ endpoint: NewWebhookEndpoint) async throws -> WebhookEndpoint {
        let now = nowMilliseconds
        let events = WebhookEndpointRows.eventsText(endpoint.events)
        let created = try await sqlWrite { db in
            guard try db.fetchOne("SELECT id FROM apps WHERE id = \(endpoint.appID)") != nil else {
                throw StoreError.notFound("app \(endpoint.appID)")
            }
            return try WebhookEndpointRows.endpoint(
                Rows.returned(
                    db,
                    """
                    INSERT INTO webhook_endpoints (app_id, url, description, events, encrypted_secret, created_at,
                        updated_at)
                    VALUES (\(endpoint.appID), \(endpoint.url), \(endpoint.description), \(events),
                        \(endpoint.encryptedSecret), \(now), \(now))
                    RETURNING \(raw: WebhookEndpointRows.columns)
                    """, "INSERT INTO webhook_endpoints"))
        }
        webhookOutbox.subscriptions.changed()
        return created
    }

    public func webhookEndpoints(appID: Int64?) async throws -> [WebhookEndpoint] {
        try await sqlRead { db in
            let filter: SQLQuery = appID.map { "WHERE app_id = \($0)" } ?? ""
            return try db.fetchAll(
                "SELECT \(raw: WebhookEndpointRows.columns) FROM webhook_endpoints " + filter + " ORDER BY id"
            ).map(WebhookEndpointRows.endpoint)
        }
    }

    public func webhookEndpoint(id: Int64) async throws -> WebhookEndpoint? {
        try await sqlRead { db in
            try db.fetchOne("SELECT \(raw: WebhookEndpointRows.columns) FROM webhook_endpoints WHERE id = \(id)")
                .map(WebhookEndpointRows.endpoint)
        }
    }

    public func updateWebhookEndpoint(id: Int64, _ change: WebhookEndpointChange, at: Date) async throws
        -> WebhookEndpoint?
    {
        let now = SQLTime.milliseconds(at)
        let updated = try await sqlWrite { db -> WebhookEndpoint? in
            var sets: SQLQuery = "updated_at = \(now)"
            if let url = change.url { sets = sets + ", url = \(url)" }
            if let description = change.description { sets = sets + ", description = \(description)" }
            if let events = change.events { sets = sets + ", events = \(WebhookEndpointRows.eventsText(events))" }
            switch change.enabled {
            case true?: sets = sets + ", disabled_at = NULL, disabled_reason = NULL, failing_since = NULL"
            case false?:
                sets =
                    sets
                    + ", disabled_at = coalesce(disabled_at, \(now)), disabled_reason = coalesce(disabled_reason, 'disabled by hand')"
            case nil: break
            }
            return try db.fetchOne(
                "UPDATE webhook_endpoints SET " + sets
                    + " WHERE id = \(id) RETURNING \(raw: WebhookEndpointRows.columns)"
            ).map(WebhookEndpointRows.endpoint)
        }
        webhookOutbox.subscriptions.changed()
        return updated
    }

    public func rotateWebhookSecret(id: Int64, encryptedSecret: [UInt8], previousUntil: Date, at: Date) async throws
        -> WebhookEndpoint?
    {
        try await sqlWriteStatement { db in
            try db.fetchOne(
                """
                UPDATE webhook_endpoints SET encrypted_previous_secret = encrypted_secret,
                    previous_secret_until = \(SQLTime.milliseconds(previousUntil)),
                    encrypted_secret = \(encryptedSecret), updated_at = \(SQLTime.milliseconds(at))
                WHERE id = \(id) RETURNING \(raw: WebhookEndpointRows.columns)
                """
            ).map(WebhookEndpointRows.endpoint)
        }
    }

    public func deleteWebhookEndpoint(id: Int64) async throws -> Bool {
        let deleted = try await sqlWrite { db in
            try db.run("DELETE FROM webhook_attempts WHERE endpoint_id = \(id)")
            try db.run("DELETE FROM webhook_outbox WHERE endpoint_id = \(id)")
            return try db.run("DELETE FROM webhook_endpoints WHERE id = \(id)") > 0
        }
        webhookOutbox.subscriptions.changed()
        return deleted
    }

    public func enqueueWebhookEvent(endpointID: Int64, type: WebhookEventType, data: JSONValue, at: Date) async throws
        -> String?
    {
        let now = SQLTime.milliseconds(at)
        return try await sqlWrite { db in
            guard let appID = try db.fetchOne("SELECT app_id FROM webhook_endpoints WHERE id = \(endpointID)")?.int64(0)
            else { return nil }
            let eventID = WebhookOutbox.newEventID()
            try WebhookOutbox.insert(
                db, endpointID: endpointID, appID: appID, eventID: eventID, type: type,
                body: WebhookOutbox.body(type: type, at: now, data: data), now: now, key: eventID)
            return eventID
        }
    }

    public func resendWebhookEvent(outboxID: Int64, endpointID: Int64, at: Date) async throws -> Bool {
        let now = SQLTime.milliseconds(at)
        return try await sqlWriteStatement { db in
            try db.run(
                """
                UPDATE webhook_outbox SET state = 'pending', next_attempt_at = \(now), lease_owner = NULL,
                    lease_until = NULL, updated_at = \(now)
                WHERE id = \(outboxID) AND endpoint_id = \(endpointID)
                """) > 0
        }
    }

    public func claimWebhookDeliveries(
        owner: String, now: Date, leaseFor: TimeInterval, limit: Int, capacity: @escaping @Sendable (Int64) -> Int
    ) async throws -> [WebhookDelivery] {
        let nowMs = SQLTime.milliseconds(now)
        let until = nowMs + SQLDuration.milliseconds(leaseFor)
        let due: SQLQuery = """
             state = 'pending' AND next_attempt_at <= \(nowMs) AND (lease_until IS NULL OR lease_until < \(nowMs))
            """
        return try await sqlWrite { db in
            // Endpoints with due rows first, then each one's share: a slow endpoint's backlog
            // never takes the places of another endpoint's events. Each endpoint is asked for
            // one due row through `webhook_outbox_due` (endpoint, next attempt), which passes
            // only the rows leased now ahead of it; a DISTINCT over the outbox would read the
            // whole backlog on every claim.
            let endpoints = try db.fetchAll(
                """
                SELECT id FROM webhook_endpoints WHERE disabled_at IS NULL AND EXISTS (
                    SELECT 1 FROM webhook_outbox WHERE endpoint_id = webhook_endpoints.id AND
                """ + due + ") ORDER BY id LIMIT 1000"
            ).map { $0.int64(0) }
            var claimed: [WebhookDelivery] = []
            for endpoint in endpoints where claimed.count < limit {
                let share = min(capacity(endpoint), limit - claimed.count)
                guard share > 0 else { continue }
                let rows = try db.fetchAll(
                    """
                    UPDATE webhook_outbox SET lease_owner = \(owner), lease_until = \(until)
                    WHERE id IN (SELECT id FROM webhook_outbox WHERE endpoint_id = \(endpoint) AND
                    """ + due
                        + """
                         ORDER BY next_attempt_at, id LIMIT \(share)\(raw: db.dialect.skipLocked))
                        RETURNING id, endpoint_id, app_id, event_id, type, body, attempts, created_at
                        """)
                claimed += rows.map { row in
                    WebhookDelivery(
                        id: row.int64(0), endpointID: row.int64(1), appID: row.int64(2), eventID: row.string(3),
                        type: row.string(4), body: row.string(5), attempts: Int(row.int64(6)), createdAt: row.date(7))
                }
            }
            return claimed
        }
    }

    public func recordWebhookAttempts(_ results: [WebhookAttemptResult]) async throws {
        guard !results.isEmpty else { return }
        let updated = updatedAt(results)
        // One write for a sender's batch: delivered rows in one statement per chunk, each
        // endpoint's failing mark once (from its results in order), and of each endpoint's
        // attempts only the last ones kept anyway (the sender records hundreds a pass).
        let delivered = results.filter(\.succeeded).map { SQLValue($0.outboxID) }
        let byEndpoint = Dictionary(grouping: results, by: \.endpointID)
        let disabled = try await sqlWrite { db in
            var disabled = false
            for (_, endpointResults) in byEndpoint.sorted(by: { $0.key < $1.key }) {
                for r in endpointResults.suffix(keptWebhookAttempts) {
                    try db.run(
                        """
                        INSERT INTO webhook_attempts (endpoint_id, outbox_id, event_id, type, attempted_at, status,
                            latency_ms, response)
                        VALUES (\(r.endpointID), \(r.outboxID), \(r.eventID), \(r.type),
                            \(SQLTime.milliseconds(r.attemptedAt)), \(r.status), \(r.latencyMilliseconds),
                            \(r.response))
                        """)
                }
            }
            for list in SQLList.chunks(delivered) {
                try db.run(
                    """
                    UPDATE webhook_outbox SET state = 'delivered', attempts = attempts + 1, lease_owner = NULL,
                        lease_until = NULL, updated_at = \(updated)
                    WHERE id IN (\(SQLQuery.list(list))) AND state = 'pending'
                    """)
            }
            for r in results where !r.succeeded {
                let next: SQLQuery =
                    switch r.next {
                    case .retry(let when): "next_attempt_at = \(SQLTime.milliseconds(when))"
                    case .failed, .delivered: "state = 'failed'"
                    }
                try db.run(
                    "UPDATE webhook_outbox SET " + next
                        + """
                        , attempts = attempts + 1, lease_owner = NULL, lease_until = NULL, updated_at = \(updated)
                        WHERE id = \(r.outboxID) AND state = 'pending'
                        """)
            }
            for (endpoint, endpointResults) in byEndpoint.sorted(by: { $0.key < $1.key }) {
                // As if recorded one by one: a success clears the failing mark, the first
                // failure after it (or the first at all, when the mark is clear) sets it.
                let lastSuccess = endpointResults.lastIndex(where: \.succeeded)
                let failuresAfter = endpointResults[(lastSuccess.map { $0 + 1 } ?? 0)...]
                if let firstFailure = failuresAfter.first {
                    let at = SQLTime.milliseconds(firstFailure.attemptedAt)
                    try db.run(
                        lastSuccess == nil
                            ? """
                            UPDATE webhook_endpoints SET failing_since = \(at)
                            WHERE id = \(endpoint) AND failing_since IS NULL
                            """
                            : "UPDATE webhook_endpoints SET failing_since = \(at) WHERE id = \(endpoint)")
                } else {
                    try db.run(
                        "UPDATE webhook_endpoints SET failing_since = NULL WHERE id = \(endpoint) AND failing_since IS NOT NULL"
                    )
                }
                if let r = endpointResults.first(where: { $0.disableEndpoint != nil }), let reason = r.disableEndpoint {
                    let at = SQLTime.milliseconds(r.attemptedAt)
                    disabled =
                        try db.run(
                            """
                            UPDATE webhook_endpoints SET disabled_at = \(at), disabled_reason = \(reason),
                                updated_at = \(at)
                            WHERE id = \(endpoint) AND disabled_at IS NULL
                            """) > 0 || disabled
                }
            }
            return disabled
        }
        if disabled { webhookOutbox.subscriptions.changed() }
    }

    private func updatedAt(_ results: [WebhookAttemptResult]) -> Int64 {
        SQLTime.milliseconds(results.map(\.attemptedAt).max() ?? Date())
    }

    public func webhookAttempts(endpointID: Int64, limit: Int) async throws -> [WebhookAttempt] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT id, endpoint_id, outbox_id, event_id, type, attempted_at, status, latency_ms, response
                FROM webhook_attempts WHERE endpoint_id = \(endpointID) ORDER BY id DESC LIMIT \(max(1, limit))
                """
            ).map { row in
                WebhookAttempt(
                    id: row.int64(0), endpointID: row.int64(1), outboxID: row.int64(2), eventID: row.string(3),
                    type: row.string(4), attemptedAt: row.date(5),
                    status: row.isNull(6) ? nil : Int(row.int64(6)), latencyMilliseconds: row.int64(7),
                    response: row.string(8))
            }
        }
    }

    public func pruneWebhookOutbox(deliveredBefore: Date, failedBefore: Date, keepAttempts: Int) async throws -> Int {
        let delivered = SQLTime.milliseconds(deliveredBefore)
        let failed = SQLTime.milliseconds(failedBefore)
        return try await sqlWrite { db in
            let pruned = try db.run(
                """
                DELETE FROM webhook_outbox
                WHERE (state = 'delivered' AND updated_at < \(delivered)) OR (state = 'failed' AND updated_at < \(failed))
                """)
            for endpoint in try db.fetchAll("SELECT id FROM webhook_endpoints") {
                let id = endpoint.int64(0)
                guard
                    let oldestKept = try db.fetchOne(
                        """
                        SELECT id FROM webhook_attempts WHERE endpoint_id = \(id)
                        ORDER BY id DESC LIMIT 1 OFFSET \(max(0, keepAttempts - 1))
                        """)?.int64(0)
                else { continue }
                try db.run("DELETE FROM webhook_attempts WHERE endpoint_id = \(id) AND id < \(oldestKept)")
            }
            return pruned
        }
    }

    public func webhookOutboxDepth() async throws -> Int {
        try await sqlRead { db in
            Int(try db.fetchOne("SELECT count(*) FROM webhook_outbox WHERE state = 'pending'")?.int64(0) ?? 0)
        }
    }

    public func webhookEndpointsChanged() {
        webhookOutbox.subscriptions.changed()
    }
}

/// The attempts kept per endpoint (the sender prunes to as many): a batch records no more
/// than this many of one endpoint's.
private let keptWebhookAttempts = 100

/// One row mapper for webhook endpoints.
package enum WebhookEndpointRows {
    package static let columns = """
        id, app_id, url, description, events, encrypted_secret, encrypted_previous_secret, previous_secret_until, \
        disabled_at, disabled_reason, failing_since, created_at, updated_at
        """

    package static func endpoint(_ row: SQLRow) throws -> WebhookEndpoint {
        WebhookEndpoint(
            id: row.int64(0), appID: row.int64(1), url: row.string(2), description: row.string(3),
            events: events(row.string(4)), encryptedSecret: row.bytes(5),
            encryptedPreviousSecret: row.isNull(6) ? nil : row.bytes(6), previousSecretUntil: row.optionalDate(7),
            disabledAt: row.optionalDate(8), disabledReason: row.optionalString(9), failingSince: row.optionalDate(10),
            createdAt: row.date(11), updatedAt: row.date(12))
    }

    /// The stored JSON array; names this build does not know are left out.
    package static func events(_ text: String) -> [WebhookEventType] {
        guard case .array(let items)? = try? JSONValue(parsing: text) else { return [] }
        return items.compactMap { $0.stringValue.flatMap(WebhookEventType.init(rawValue:)) }
    }

    package static func eventsText(_ events: [WebhookEventType]) -> String {
        JSONValue.serializedArray(events.map(\.rawValue))
    }
}
