import Foundation
import Logging
import TuisongCore
import TuisongDelivery

/// The gateway's side of the store's change feed: what each change drops from this node's
/// caches, and the wake-up a submitted message sends to idle nodes.
enum StoreChangeWiring {
    /// Subscribes this node's caches to `feed`: an app's change drops it from the app cache
    /// (and the API keys resolved to it), a credential change drops the app's credentials as
    /// the transports resolved them (and a receipt credential change the app's opened callback
    /// credentials), `wake` wakes the dispatcher, and `nil` (the feed may have missed changes)
    /// drops all of it for every app.
    static func subscribe(
        _ feed: any StoreChangeFeed, store: any AppStore, apps: AppCache, transports: GatewayTransports,
        engine: DeliveryEngine, logger: Logger,
        receiptCallbackCredentials: ReceiptCallbackCredentialCache? = nil,
        webhooksChanged: @escaping @Sendable () -> Void = {}
    ) {
        feed.subscribe { change in
            switch change {
            case .app(let id)?:
                apps.changed(id: id)
                receiptCallbackCredentials?.changed(appID: id)
            case .credentials(let appID)?:
                Task { await transports.uploadedCredentialsChanged(appID: appID) }
            case .channelCredentials(let appID)?:
                transports.credentialsChanged(appID: appID)
            case .settings?:
                // Nothing in the gateway caches SettingsStore values today.
                break
            case .wake?:
                engine.wake()
            case .webhooks?:
                webhooksChanged()
            case .receiptCallbackCredentials(let appID)?:
                receiptCallbackCredentials?.changed(appID: appID)
            case nil:
                webhooksChanged()
                receiptCallbackCredentials?.changedAll()
                Task {
                    do {
                        for app in try await store.apps() {
                            apps.changed(id: app.id)
                            await transports.uploadedCredentialsChanged(appID: app.id)
                            transports.credentialsChanged(appID: app.id)
                        }
                    } catch {
                        logger.warning(
                            "cannot resynchronise the caches after the change feed reconnected; they expire on their own",
                            metadata: ["error": "\(error)"])
                    }
                    engine.wake()
                }
            }
        }
    }
}

/// The delivery engine as the APIs and providers submit to it: a message queued for now
/// also wakes the other nodes (`StoreChange.wake`), so an idle node starts on it at once —
/// published here unless the store announces it with the insert (`announcesQueuedMessages`).
struct WakingGateway: PushGateway {
    let engine: DeliveryEngine
    let changes: any StoreChangeFeed

    func admit(appID: Int64) async throws {
        try await engine.admit(appID: appID)
    }

    func check(_ content: PushContent, options: PushOptions) throws {
        try engine.check(content, options: options)
    }

    func submit(_ job: PushJob) async throws -> MessageRecord {
        let record = try await engine.submit(job)
        if record.state == .queued, !changes.announcesQueuedMessages { await changes.publish(.wake) }
        return record
    }

    func status(messageID: Int64) async throws -> MessageStatus? {
        try await engine.status(messageID: messageID)
    }

    func cancel(messageID: Int64) async throws -> Bool {
        try await engine.cancel(messageID: messageID)
    }
}
