import Foundation
import Logging
import Synchronization
import TuisongCore

/// Sends delivery rows that are due again (429, 5xx, connection trouble, released holds):
/// claims a batch (`queued` → `sending`), sends it per app in chunks under the engine's
/// in-flight bound, and commits the outcomes together.
struct RetryWorker: Sendable {
    let engine: DeliveryEngine

    func run() async {
        let messages = MessageCache(engine: engine)
        var expiredHeldAt = Date.distantPast
        while !engine.isStopping {
            // Expiry is checked now and then, not on every poll: a held row's moment is its
            // message's expiry, hours away, and the sweep is a write transaction.
            if engine.clock.now.timeIntervalSince(expiredHeldAt) >= 10 {
                expiredHeldAt = engine.clock.now
                await expireHeld()
            }
            var claimed: [DeliveryRecord] = []
            var failed = false
            // The next look is due a poll after this one (`WakeSignal`: time that passes
            // before the wait begins is not lost).
            let lookedAt = engine.clock.now
            do {
                claimed = try await engine.store.claimDueDeliveries(now: lookedAt, limit: 500)
            } catch {
                failed = true
                engine.logger.error("retry worker: claiming deliveries failed", metadata: ["error": "\(error)"])
            }
            if claimed.isEmpty {
                engine.passes.completed(.retry, busy: failed)
                await engine.retryWake.wait(
                    until: lookedAt + engine.settings.pollInterval.timeInterval, on: engine.clock)
                continue
            }
            let updates = await retry(claimed, messages: messages)
            var delay: Duration = .milliseconds(50)
            while true {
                do {
                    try await engine.store.applyDeliveryUpdates(updates, at: engine.clock.now)
                    await reportHeld(updates, claimed: claimed, messages: messages)
                    engine.passes.completed(.retry, busy: true)
                    break
                } catch {
                    engine.logger.error(
                        "retry worker: recording outcomes failed; retrying",
                        metadata: ["outcomes": "\(updates.count)", "error": "\(error)"])
                    try? await engine.clock.sleep(for: delay)
                    delay = min(delay * 2, .seconds(5))
                }
            }
        }
    }

    /// Tells the engine's hold watcher which routes the committed `updates` held again.
    private func reportHeld(_ updates: [DeliveryUpdate], claimed: [DeliveryRecord], messages: MessageCache) async {
        let heldReasons = Dictionary(
            updates.lazy.filter { $0.to == .held }.map { ($0.deliveryID, $0.reason) }, uniquingKeysWith: { $1 })
        guard !heldReasons.isEmpty else { return }
        var routes: Set<HeldRoute> = []
        for delivery in claimed {
            guard let reason = heldReasons[delivery.id], let (message, _) = await messages.get(delivery.messageID)
            else { continue }
            if let route = HeldRoute.of(
                appID: message.appID, channel: delivery.channel, environment: delivery.environment,
                selector: delivery.credentialSelector, reason: reason)
            {
                routes.insert(route)
            }
        }
        engine.heldCommitted(routes)
    }

    /// Held deliveries whose message expired fail with their reason, a bounded batch per pass.
    private func expireHeld() async {
        do {
            try await engine.store.expireHeldDeliveries(now: engine.clock.now, limit: 500)
        } catch {
            engine.logger.error("retry worker: expiring held deliveries failed", metadata: ["error": "\(error)"])
        }
    }

    /// One update per claimed delivery: sent again through the transport, one batch per app
    /// and chunk of permits, each with the bytes and headers its message had.
    private func retry(_ claimed: [DeliveryRecord], messages: MessageCache) async -> [DeliveryUpdate] {
        var updates: [DeliveryUpdate] = []
        var sendable: [Int64: (app: App, items: [(delivery: DeliveryRecord, message: MessageRecord)])] = [:]
        for delivery in claimed {
            guard let (message, app) = await messages.get(delivery.messageID) else {
                updates.append(Self.update(delivery, .failed(.messageGone), message: nil, engine: engine))
                continue
            }
            sendable[app.id, default: (app, [])].items.append((delivery, message))
        }
        await withTaskGroup(of: [DeliveryUpdate].self) { group in
            for (app, items) in sendable.values {
                var start = 0
                while start < items.count {
                    let wanted = items.count - start
                    let granted = await engine.permits.acquire(atLeast: 1, upTo: wanted)
                    let chunk = Array(items[start..<(start + granted)])
                    start += granted
                    group.addTask {
                        defer { engine.permits.signal(count: chunk.count) }
                        // A message's retries share its content, and so its rendering.
                        var shared: [Int64: SharedContent] = [:]
                        let batch = PushBatch(
                            app: app,
                            pushes: chunk.map { item in
                                // The content decided for this device when it was first sent (a
                                // policy's own), else the message's.
                                let content: SharedContent
                                if let own = item.delivery.content {
                                    content = SharedContent(own)
                                } else if let known = shared[item.message.id] {
                                    content = known
                                } else {
                                    content = SharedContent(item.message.content)
                                    shared[item.message.id] = content
                                }
                                return OutgoingPush(
                                    token: item.delivery.token, environment: item.delivery.environment,
                                    selector: item.delivery.credentialSelector, content: content,
                                    headers: PushHeaders(
                                        item.message.options, messageID: item.message.id, appID: item.message.appID),
                                    channel: item.delivery.channel, deviceID: item.delivery.deviceID)
                            })
                        let outcomes = await engine.transport.outcomes(of: batch)
                        return zip(chunk, outcomes).map { item, outcome in
                            Self.update(item.delivery, outcome, message: item.message, engine: engine)
                        }
                    }
                }
            }
            for await chunkUpdates in group { updates += chunkUpdates }
        }
        return updates
    }

    /// What `outcome` makes of a claimed delivery (`sending`).
    static func update(
        _ delivery: DeliveryRecord, _ outcome: SendOutcome, message: MessageRecord?, engine: DeliveryEngine
    )
        -> DeliveryUpdate
    {
        let attempts = delivery.attempts + 1
        func update(
            _ to: DeliveryState, _ reason: SendReason?, serviceMessageID: String? = nil, next: Date? = nil,
            invalidation: DeviceInvalidation? = nil
        ) -> DeliveryUpdate {
            DeliveryUpdate(
                deliveryID: delivery.id, messageID: delivery.messageID, from: .sending, to: to,
                reason: reason?.description, serviceMessageID: serviceMessageID, attempts: attempts,
                nextAttemptAt: next,
                invalidation: invalidation)
        }
        switch outcome {
        case .delivered(let serviceMessageID):
            return update(.delivered, nil, serviceMessageID: serviceMessageID)
        case .invalidate(let reason, let since):
            let invalidation = delivery.deviceID.map {
                DeviceInvalidation(deviceID: $0, reason: reason.description, at: since ?? engine.clock.now)
            }
            return update(.failed, reason, invalidation: invalidation)
        case .retry(let reason, let hint):
            if let message, let next = engine.nextAttempt(after: attempts, message: message, hint: hint) {
                return update(.queued, reason, next: next)
            }
            return update(.failed, reason)
        case .held(let reason):
            // Until the message expires (`expireHeldDeliveries` then fails it).
            return update(.held, reason, next: message.map(engine.expiry(of:)))
        case .skipped(let reason):
            return update(.skipped, reason)
        case .failed(let reason):
            return update(.failed, reason)
        }
    }
}

/// Messages of retried deliveries, loaded once per worker; their apps come from the engine's
/// `AppCache` on every retry, so a changed bundle id is used at once.
final class MessageCache: Sendable {
    private let engine: DeliveryEngine
    private let entries = Mutex<[Int64: MessageRecord]>([:])

    init(engine: DeliveryEngine) {
        self.engine = engine
    }

    func get(_ id: Int64) async -> (MessageRecord, App)? {
        var message = entries.withLock { $0[id] }
        if message == nil {
            message = try? await engine.store.message(id: id)
            if let message {
                entries.withLock { entries in
                    if entries.count > 1000 { entries.removeAll() }
                    entries[id] = message
                }
            }
        }
        guard let message, let app = try? await engine.app(id: message.appID) else { return nil }
        return (message, app)
    }
}
