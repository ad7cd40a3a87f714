import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPlugin
import TuisongPluginTestKit

@testable import EasemobProvider

/// The directory's app-list reads may overlap (a background reload beside a resolve's own): a
/// read that began before an app was configured and ends after a newer one must not put back a
/// list without that app, which answered 404 for a configured pair until the next reload.
@Suite struct DirectoryReloadTests {
    /// An app store whose first `apps()` answers what it read only when the test lets it.
    final class HeldFirstRead: AppStore, @unchecked Sendable {
        // @unchecked: `held` and `reads` are guarded by `lock`.
        let store: any AppStore
        let lock = NSLock()
        var reads = 0
        var firstAnswer: [App]?
        let release = AsyncStream<Void>.makeStream()

        init(_ store: any AppStore) { self.store = store }

        func apps() async throws -> [App] {
            let read = try await store.apps()
            let first = lock.withLock {
                reads += 1
                return reads == 1
            }
            if first {
                for await _ in release.stream { break }
            }
            return read
        }
        func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App {
            try await store.createApp(name: name, bundleID: bundleID, apiKeyHash: apiKeyHash)
        }
        func app(id: Int64) async throws -> App? { try await store.app(id: id) }
        func app(apiKeyHash: String) async throws -> App? { try await store.app(apiKeyHash: apiKeyHash) }
        func app(vendor: String, setting: String, value: String) async throws -> App? {
            try await store.app(vendor: vendor, setting: setting, value: value)
        }
        func updateApp(_ app: App) async throws { try await store.updateApp(app) }
        func deleteApp(id: Int64) async throws -> Bool { try await store.deleteApp(id: id) }
    }

    @Test func aSlowReadFromBeforeTheAppWasConfiguredDoesNotHideIt() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let temporary = try TemporaryStore(providers: [EasemobProvider.self], clock: clock)
        defer { temporary.remove() }
        let sealer = try TestSealer()
        let apps = HeldFirstRead(temporary.store)
        let directory = EasemobDirectory(apps: apps, sealer: sealer, clock: clock, changes: AppChangeNotices())

        // A read of the list begins while no app has the pair, and is held.
        let slow = Task { try await directory.reload() }
        #expect(await eventually { apps.lock.withLock { apps.reads } == 1 })

        var app = try await temporary.store.createApp(name: "chat", bundleID: "com.example.chat", apiKeyHash: "h")
        app.vendorSettings["easemob"] = try EasemobAppSettings(
            org: "acme", appName: "chat", clientID: "id", clientSecret: "secret", timeZone: TimeZone(secondsFromGMT: 0)!
        ).stored(appID: app.id, sealer: sealer)
        try await temporary.store.updateApp(app)
        // A newer read finds it.
        #expect(try await directory.resolve(org: "acme", app: "chat")?.app.id == app.id)
        #expect(directory.claims(org: "acme", app: "chat"))

        // The old read ends last: the pair stays served.
        apps.release.continuation.yield()
        try await slow.value
        #expect(directory.claims(org: "acme", app: "chat"), "the older read put back a list without the app")
        #expect(try await directory.resolve(org: "acme", app: "chat")?.app.id == app.id)
    }
}
