import Foundation
import Logging
import Synchronization
import TuisongCore

/// Sends delivery rows that are due again (429, 5xx, connection trouble, released holds):
/// claims a batch (`queued` → `sending`), sends each under the engine's in-flight bound, and
/// commits the outcomes in batches.
struct RetryWorker: Sendable {
    let engine: DeliveryEngine

    func run() async {
        let messages = MessageCache(engine: engine)
        while !engine.isStopping {
            var claimed: [DeliveryRecord] = []
            do {
                claimed = try await engine.store.claimDueDeliveries(now: engine.clock.now, limit: 500)
            } catch {
                engine.logger.error("retry worker: claiming deliveries failed: \(error)")
            }
            if claimed.isEmpty {
                try? await Task.sleep(for: engine.settings.pollInterval)
                continue
            }
            let batch = await withTaskGroup(of: DeliveryUpdate.self) { group in
                for delivery in claimed {
                    await engine.permits.wait()
                    group.addTask {
                        defer { engine.permits.signal() }
                        return await retry(delivery, messages: messages)
                    }
                }
                var updates: [DeliveryUpdate] = []
                for await update in group { updates.append(update) }
                return updates
            }
            var delay: Duration = .milliseconds(50)
            while true {
                do {
                    try await engine.store.applyDeliveryUpdates(batch, at: engine.clock.now)
                    break
                } catch {
                    engine.logger.error("retry worker: recording \(batch.count) outcomes failed: \(error); retrying")
                    try? await Task.sleep(for: delay)
                    delay = min(delay * 2, .seconds(5))
                }
            }
        }
    }

    private func retry(_ delivery: DeliveryRecord, messages: MessageCache) async -> DeliveryUpdate {
        let attempts = delivery.attempts + 1
        func update(
            _ to: DeliveryState, _ reason: String?, apnsID: String? = nil, next: Date? = nil,
            invalidation: DeviceInvalidation? = nil
        ) -> DeliveryUpdate {
            DeliveryUpdate(
                deliveryID: delivery.id, messageID: delivery.messageID, from: .sending, to: to, reason: reason,
                apnsID: apnsID, attempts: attempts, nextAttemptAt: next, invalidation: invalidation)
        }
        guard let (message, app) = await messages.get(delivery.messageID) else {
            return update(.failed, "MessageGone")
        }
        // The bytes decided for this device when it was first sent (a policy's own payload).
        let outcome = await engine.sender.send(
            app: app, message: message, token: delivery.token, environment: delivery.environment,
            selector: delivery.credentialSelector, payload: delivery.payload)
        switch outcome {
        case .delivered(let apnsID):
            return update(.delivered, nil, apnsID: apnsID)
        case .invalidate(let reason, let since):
            let invalidation = delivery.deviceID.map {
                DeviceInvalidation(deviceID: $0, reason: reason, at: since ?? engine.clock.now)
            }
            return update(.failed, reason, invalidation: invalidation)
        case .retry(let reason, let hint):
            if let next = engine.nextAttempt(after: attempts, message: message, hint: hint) {
                return update(.queued, reason, next: next)
            }
            return update(.failed, reason)
        case .held(let reason):
            return update(.held, reason)
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
