import Foundation
import Testing
import TuisongCore

@testable import TuisongSQLStore

/// Webhook endpoints and their outbox on both databases: events are written with the change
/// that causes them, only for endpoints that receive them; rows are claimed under a lease,
/// shared out per endpoint, and move on with each attempt.
@Suite struct WebhookStoreTests {
    static let start = SQLTime.date(SQLTime.milliseconds(Date()))

    static func endpoint(
        _ store: any GatewayStore, app: Int64, _ events: [WebhookEventType], url: String = "https://a.example/hook"
    )
        async throws -> WebhookEndpoint
    {
        try await store.createWebhookEndpoint(
            NewWebhookEndpoint(appID: app, url: url, description: "d", events: events, encryptedSecret: [1, 2, 3]))
    }

    /// Everything pending, claimed far in the future (leases released again by the caller's
    /// later claims being later still).
    static func pending(_ store: any GatewayStore, at: Date) async throws -> [WebhookDelivery] {
        try await store.claimWebhookDeliveries(owner: "probe", now: at, leaseFor: 1, limit: 1000) { _ in 1000 }
    }

    @Test(arguments: Backend.allCases) func endpointsAreStoredAndChanged(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "hooks").id
            let created = try await Self.endpoint(store, app: app, [.messageCompleted, .deliveryFailed])
            #expect(created.events == [.messageCompleted, .deliveryFailed] && created.isEnabled)
            #expect(created.encryptedSecret == [1, 2, 3])
            #expect(try await store.webhookEndpoints(appID: app).map(\.id) == [created.id])
            #expect(try await store.webhookEndpoints(appID: app + 1000).isEmpty)

            let changed = try #require(
                try await store.updateWebhookEndpoint(
                    id: created.id, WebhookEndpointChange(url: "https://b.example/x", enabled: false), at: Self.start))
            #expect(changed.url == "https://b.example/x" && !changed.isEnabled)
            #expect(changed.disabledReason == "disabled by hand")
            let enabled = try #require(
                try await store.updateWebhookEndpoint(
                    id: created.id, WebhookEndpointChange(enabled: true), at: Self.start))
            #expect(enabled.isEnabled && enabled.disabledReason == nil)

            let rotated = try #require(
                try await store.rotateWebhookSecret(
                    id: created.id, encryptedSecret: [9], previousUntil: Self.start.addingTimeInterval(60),
                    at: Self.start))
            #expect(rotated.encryptedSecret == [9] && rotated.encryptedPreviousSecret == [1, 2, 3])
            #expect(rotated.previousSecretUntil == Self.start.addingTimeInterval(60))

            await #expect(throws: StoreError.self) {
                _ = try await Self.endpoint(store, app: 987_654, [.messageCompleted])
            }
            #expect(try await store.deleteWebhookEndpoint(id: created.id))
            #expect(try await store.deleteWebhookEndpoint(id: created.id) == false)
        }
    }

    @Test(arguments: Backend.allCases) func aFlushWritesItsEventsInItsTransaction(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "events").id
            let other = try await makeApp(store, "quiet").id
            let all = try await Self.endpoint(
                store, app: app, [.messageCompleted, .deviceInvalidated, .deliveryFailed])
            let defaults = try await Self.endpoint(store, app: app, WebhookEventType.defaults)
            _ = try await Self.endpoint(store, app: other, WebhookEventType.defaults)
            let device = try await store.registerDevice(
                appID: app, DeviceRegistration(token: token(1), environment: .production, channel: .apns)
            ).device
            let message = try await store.createMessage(
                PushJob(appID: app, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
                state: .queued)
            #expect(try await store.startMessage(id: message.id, total: 2, at: Self.start))
            var counts = DeliveryCounts()
            counts.failed = 2
            let flush = MessageProgress(
                messageID: message.id, cursor: 2, counts: counts, failures: ["Unregistered": 1, "BadTopic": 1],
                deliveries: [
                    NewDelivery(
                        deviceID: device.id, token: device.token, environment: .production, state: .failed,
                        reason: "Unregistered", attempts: 1, channel: .apns),
                    NewDelivery(
                        deviceID: nil, token: "ab", environment: .production, state: .failed, reason: "BadTopic",
                        attempts: 1, channel: .fcm),
                ],
                invalidations: [
                    DeviceInvalidation(deviceID: device.id, reason: "Unregistered", at: Date().addingTimeInterval(60))
                ],
                finalState: .completed)
            try await store.recordProgress(flush, at: Self.start)
            // A repeated final flush (a slice written twice) completes nothing twice.
            try await store.recordProgress(
                MessageProgress(messageID: message.id, cursor: 2, finalState: .completed), at: Self.start)

            let rows = try await Self.pending(store, at: Self.start.addingTimeInterval(1))
            let byEndpoint = Dictionary(grouping: rows, by: \.endpointID)
            #expect(
                byEndpoint[all.id]?.map(\.type).sorted() == [
                    "delivery.failed", "delivery.failed", "device.invalidated", "message.completed",
                ])
            #expect(
                byEndpoint[defaults.id]?.map(\.type).sorted() == ["device.invalidated", "message.completed"],
                "per-delivery events only for endpoints that name them")
            #expect(rows.allSatisfy { $0.appID == app }, "the other app's endpoint gets none of this app's events")

            let completed = try #require(byEndpoint[all.id]?.first { $0.type == "message.completed" })
            let twin = try #require(byEndpoint[defaults.id]?.first { $0.type == "message.completed" })
            #expect(completed.eventID == twin.eventID && completed.eventID.hasPrefix("msg_"))
            let body = try JSONValue(parsing: completed.body)
            #expect(body["type"] == "message.completed")
            #expect(body["data"]?["message_id"] == .int(message.id))
            #expect(body["data"]?["state"] == "completed")
            #expect(body["data"]?["counts"]?["failed"] == 2)
            #expect(body["data"]?["channels"]?["fcm"]?["failed"] == 1)
            #expect(body["timestamp"]?.stringValue?.hasSuffix("Z") == true)
            let invalidated = try #require(byEndpoint[all.id]?.first { $0.type == "device.invalidated" })
            let data = try JSONValue(parsing: invalidated.body)["data"]
            #expect(data?["token"] == .string(device.token) && data?["channel"] == "apns")
            #expect(data?["reason"] == "Unregistered")
            let failed = try byEndpoint[all.id]!.filter { $0.type == "delivery.failed" }
                .map { try JSONValue(parsing: $0.body)["data"] }
            #expect(Set(failed.compactMap { $0?["reason"]?.stringValue }) == ["Unregistered", "BadTopic"])
        }
    }

    @Test(arguments: Backend.allCases) func anAppWithoutEndpointsWritesNoEvents(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "none").id
            let message = try await store.createMessage(
                PushJob(appID: app, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
                state: .queued)
            try await store.recordProgress(
                MessageProgress(messageID: message.id, cursor: 0, finalState: .completed), at: Self.start)
            #expect(try await store.webhookOutboxDepth() == 0)
            // An endpoint created afterwards sees later events at once (the cache is dropped).
            _ = try await Self.endpoint(store, app: app, [.messageCompleted])
            let second = try await store.createMessage(
                PushJob(appID: app, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
                state: .queued)
            try await store.recordProgress(
                MessageProgress(messageID: second.id, cursor: 0, finalState: .completed), at: Self.start)
            #expect(try await store.webhookOutboxDepth() == 1)
        }
    }

    @Test(arguments: Backend.allCases) func rowsAreLeasedSharedOutAndMovedOn(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "lease").id
            let slow = try await Self.endpoint(store, app: app, [.messageCompleted])
            let fast = try await Self.endpoint(store, app: app, [.messageCompleted])
            for _ in 0..<3 {
                let m = try await store.createMessage(
                    PushJob(
                        appID: app, vendor: "native", audience: .all, content: PushContent(), options: PushOptions()),
                    state: .queued)
                try await store.recordProgress(
                    MessageProgress(messageID: m.id, cursor: 0, finalState: .completed), at: Self.start)
            }
            let now = Self.start.addingTimeInterval(1)
            // The slow endpoint may take one more now; the other three.
            let first = try await store.claimWebhookDeliveries(owner: "a", now: now, leaseFor: 30, limit: 100) {
                $0 == slow.id ? 1 : 3
            }
            #expect(first.filter { $0.endpointID == slow.id }.count == 1)
            #expect(first.filter { $0.endpointID == fast.id }.count == 3)
            // Leased: another node claims only what is left.
            let second = try await store.claimWebhookDeliveries(owner: "b", now: now, leaseFor: 30, limit: 100) { _ in
                10
            }
            #expect(second.count == 2 && second.allSatisfy { $0.endpointID == slow.id })
            #expect(Set(second.map(\.id)).isDisjoint(with: first.map(\.id)))

            // Node a dies: after its lease, its rows are claimed again under the same event ids.
            let afterLease = now.addingTimeInterval(31)
            let retaken = try await store.claimWebhookDeliveries(owner: "c", now: afterLease, leaseFor: 30, limit: 100)
            {
                _ in 10
            }
            #expect(Set(retaken.map(\.eventID)) == Set((first + second).map(\.eventID)))

            // Outcomes: delivered rows are done; a retry waits for its time; 410 disables.
            let one = try #require(retaken.first { $0.endpointID == fast.id })
            let two = try #require(retaken.first { $0.endpointID == fast.id && $0.id != one.id })
            let gone = try #require(retaken.first { $0.endpointID == slow.id })
            try await store.recordWebhookAttempts([
                WebhookAttemptResult(
                    outboxID: one.id, endpointID: fast.id, eventID: one.eventID, type: one.type,
                    attemptedAt: afterLease,
                    status: 204, latencyMilliseconds: 3, response: "", next: .delivered),
                WebhookAttemptResult(
                    outboxID: two.id, endpointID: fast.id, eventID: two.eventID, type: two.type,
                    attemptedAt: afterLease,
                    status: 500, latencyMilliseconds: 4, response: "oops",
                    next: .retry(at: afterLease.addingTimeInterval(300))),
                WebhookAttemptResult(
                    outboxID: gone.id, endpointID: slow.id, eventID: gone.eventID, type: gone.type,
                    attemptedAt: afterLease,
                    status: 410, latencyMilliseconds: 5, response: "", next: .failed, disableEndpoint: "410 Gone"),
            ])
            let later = afterLease.addingTimeInterval(100)
            let notYet = try await store.claimWebhookDeliveries(owner: "c", now: later, leaseFor: 30, limit: 100) { _ in
                10
            }
            #expect(
                notYet.map(\.id).sorted()
                    == retaken.filter { $0.endpointID == fast.id && $0.id != one.id && $0.id != two.id }.map(\.id)
                    .sorted())
            #expect(!notYet.contains { $0.endpointID == slow.id }, "a disabled endpoint's rows are not claimed")
            let due = try await store.claimWebhookDeliveries(
                owner: "c", now: afterLease.addingTimeInterval(301), leaseFor: 30, limit: 100
            ) { _ in 10 }
            let retried = try #require(due.first { $0.id == two.id })
            #expect(retried.attempts == 1 && retried.eventID == two.eventID)

            let slowNow = try #require(try await store.webhookEndpoint(id: slow.id))
            #expect(!slowNow.isEnabled && slowNow.disabledReason == "410 Gone" && slowNow.failingSince == afterLease)
            #expect(try await store.webhookEndpoint(id: fast.id)?.failingSince == afterLease)
            let attempts = try await store.webhookAttempts(endpointID: fast.id, limit: 10)
            #expect(attempts.map(\.status) == [500, 204])
            #expect(attempts.first?.response == "oops")

            // Resend puts a finished row back, due now, same id; pruning removes finished rows.
            #expect(try await store.resendWebhookEvent(outboxID: one.id, endpointID: fast.id, at: later))
            #expect(try await store.resendWebhookEvent(outboxID: one.id, endpointID: slow.id, at: later) == false)
            let resent = try await store.claimWebhookDeliveries(owner: "d", now: later, leaseFor: 30, limit: 100) { _ in
                10
            }
            #expect(resent.contains { $0.id == one.id && $0.eventID == one.eventID })
            let pruned = try await store.pruneWebhookOutbox(
                deliveredBefore: later.addingTimeInterval(1), failedBefore: later.addingTimeInterval(1), keepAttempts: 1
            )
            #expect(pruned == 1, "the 410's failed row; the resent one is pending again")
            #expect(try await store.webhookAttempts(endpointID: fast.id, limit: 10).map(\.status) == [500])
        }
    }

    @Test(arguments: Backend.allCases) func aCredentialBecomingFailingIsAnEvent(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "cred").id
            let hook = try await Self.endpoint(store, app: app, [.credentialFailing])
            let credential = try await store.addChannelCredential(
                NewChannelCredential(
                    appID: app, channel: .fcm, vendorAppID: "p", clientID: "c", encryptedSecret: [1]))
            try await store.setChannelCredentialStatus(id: credential.id, status: "failing", reason: "invalid_grant")
            try await store.setChannelCredentialStatus(id: credential.id, status: "failing", reason: "invalid_grant")
            let rows = try await Self.pending(store, at: Date().addingTimeInterval(1))
            #expect(rows.count == 1 && rows.first?.endpointID == hook.id, "once, when it became failing")
            let data = try JSONValue(parsing: try #require(rows.first).body)["data"]
            #expect(data?["channel"] == "fcm" && data?["reason"] == "invalid_grant")
        }
    }

    @Test(arguments: Backend.allCases) func aSendersBatchIsRecordedAsOneByOne(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "batch").id
            let hook = try await Self.endpoint(store, app: app, [.messageCompleted])
            for _ in 0..<150 {
                _ = try await store.enqueueWebhookEvent(
                    endpointID: hook.id, type: .test, data: .object([:]), at: Self.start)
            }
            let now = Self.start.addingTimeInterval(1)
            let rows = try await store.claimWebhookDeliveries(owner: "a", now: now, leaseFor: 30, limit: 1000) { _ in
                1000
            }
            #expect(rows.count == 150)
            func result(_ row: WebhookDelivery, _ status: Int, _ next: WebhookAttemptResult.Next, at: Date)
                -> WebhookAttemptResult
            {
                WebhookAttemptResult(
                    outboxID: row.id, endpointID: row.endpointID, eventID: row.eventID, type: row.type,
                    attemptedAt: at, status: status, latencyMilliseconds: 1, response: "", next: next)
            }
            // A failure, then 147 answered, then two failures: failing since the first of those two.
            let failedAt = now.addingTimeInterval(2)
            var batch = [result(rows[0], 500, .retry(at: now.addingTimeInterval(300)), at: now)]
            batch += rows[1..<148].map { result($0, 204, .delivered, at: now.addingTimeInterval(1)) }
            batch += [
                result(rows[148], 500, .retry(at: now.addingTimeInterval(300)), at: failedAt),
                result(rows[149], 503, .retry(at: now.addingTimeInterval(300)), at: failedAt.addingTimeInterval(1)),
            ]
            try await store.recordWebhookAttempts(batch)
            #expect(try await store.webhookEndpoint(id: hook.id)?.failingSince == failedAt)
            let attempts = try await store.webhookAttempts(endpointID: hook.id, limit: 1000)
            #expect(attempts.count == 100, "only the attempts an endpoint keeps")
            #expect(attempts.first?.status == 503 && attempts.first?.outboxID == rows[149].id)
            // Delivered rows are done; the three retried wait for their time.
            let later = try await store.claimWebhookDeliveries(
                owner: "b", now: now.addingTimeInterval(301), leaseFor: 30, limit: 1000
            ) { _ in 1000 }
            #expect(Set(later.map(\.id)) == [rows[0].id, rows[148].id, rows[149].id])
            #expect(later.allSatisfy { $0.attempts == 1 })
            // A batch ending in a success clears the mark.
            try await store.recordWebhookAttempts([
                result(later[0], 500, .retry(at: now.addingTimeInterval(900)), at: now.addingTimeInterval(302)),
                result(later[1], 204, .delivered, at: now.addingTimeInterval(303)),
            ])
            #expect(try await store.webhookEndpoint(id: hook.id)?.failingSince == nil)
        }
    }

    @Test func eventIDsAreTwentyFourBase62CharactersAndDistinct() {
        let ids = (0..<2000).map { _ in WebhookOutbox.newEventID() }
        #expect(Set(ids).count == ids.count)
        #expect(ids.allSatisfy { $0.hasPrefix("msg_") && $0.count == 28 })
        let used = Set(ids.flatMap { $0.dropFirst(4) })
        #expect(used.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) })
        #expect(used.count == 62, "every character of the alphabet turns up in 48,000")
    }

    @Test(arguments: Backend.allCases) func receiptsWriteArrivedAndClickedEventsOnce(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "receipts").id
            let other = try await makeApp(store, "elsewhere").id
            let both = try await Self.endpoint(store, app: app, [.deliveryArrived, .deliveryClicked])
            let clicks = try await Self.endpoint(store, app: app, [.deliveryClicked, .deviceInvalidated])
            _ = try await Self.endpoint(store, app: app, WebhookEventType.defaults)
            _ = try await Self.endpoint(store, app: other, [.deliveryArrived, .deliveryClicked])
            let huawei = "IQAAAACy0kYkAAAXxFmq1nQ5dnXzWk9u3Ga8aPmYtGl3fVYJKFqk"
            let message = try await store.createMessage(
                PushJob(
                    appID: app, vendor: "native", audience: .tokens([huawei]), content: PushContent(),
                    options: PushOptions()),
                state: .queued)
            let at = Date(timeIntervalSince1970: 1_750_000_000)
            func receipt(_ outcome: ReceiptOutcome, token: String = huawei) -> DeliveryReceipt {
                DeliveryReceipt(messageID: message.id, token: token, channel: .huawei, outcome: outcome, at: at)
            }
            _ = try await store.recordReceipts(appID: app, [receipt(.arrived)])
            // Repeats (a service's retry, another node) and a reason after the arrival add nothing.
            _ = try await store.recordReceipts(
                appID: app,
                [
                    receipt(.arrived), receipt(.notShown(reason: "replaced", invalidatesDevice: false)),
                ])
            _ = try await store.recordReceipts(appID: app, [receipt(.clicked), receipt(.clicked)])
            // A click whose arrival never came is both.
            _ = try await store.recordReceipts(appID: app, [receipt(.clicked, token: "other-phone")])
            _ = try await store.recordReceipts(appID: app, [receipt(.clicked, token: "other-phone")])

            let rows = try await Self.pending(store, at: Date().addingTimeInterval(1))
            #expect(rows.allSatisfy { $0.appID == app }, "the other app's endpoint gets nothing of this app's")
            let byEndpoint = Dictionary(grouping: rows, by: \.endpointID)
            #expect(
                byEndpoint[both.id]?.map(\.type).sorted() == [
                    "delivery.arrived", "delivery.arrived", "delivery.clicked", "delivery.clicked",
                ])
            #expect(byEndpoint[clicks.id]?.map(\.type) == ["delivery.clicked", "delivery.clicked"])
            #expect(byEndpoint.count == 2, "an endpoint with the default events receives no per-delivery event")
            let arrived = try #require(
                try byEndpoint[both.id]?.first {
                    try $0.type == "delivery.arrived"
                        && JSONValue(parsing: $0.body)["data"]?["token"] == .string(huawei)
                })
            let data = try JSONValue(parsing: arrived.body)["data"]
            #expect(data?["message_id"] == .int(message.id) && data?["channel"] == "huawei")
            #expect(data?["at"] == .string(RFC3339.string(at)))
            // One event, one id, for every endpoint that receives it.
            let clickIDs = Set(rows.filter { $0.type == "delivery.clicked" }.map(\.eventID))
            #expect(clickIDs.count == 2)

            // An uninstalled receipt invalidates the device and says so to who asks.
            let device = try await store.registerDevice(
                appID: app, DeviceRegistration(token: token(7), environment: .production, channel: .apns)
            ).device
            let gone = DeliveryReceipt(
                messageID: message.id, token: device.token, channel: .apns,
                outcome: .notShown(reason: "uninstalled", invalidatesDevice: true), at: Date().addingTimeInterval(60))
            #expect(try await store.recordReceipts(appID: app, [gone]).invalidatedDevices == 1)
            let invalidated = try await Self.pending(store, at: Date().addingTimeInterval(5))
                .filter { $0.type == "device.invalidated" }
            #expect(invalidated.count == 2, "the clicks endpoint and the default one")
            let reason = try JSONValue(parsing: try #require(invalidated.first).body)["data"]?["reason"]
            #expect(reason == "receipt:uninstalled")
        }
    }
}
