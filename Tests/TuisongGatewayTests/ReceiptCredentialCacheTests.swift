import Foundation
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongGateway

/// The receipt routes verify with callback credentials kept opened per app and service
/// (`ReceiptCallbackCredentialCache`). A key changed where this gateway was not told (another
/// node whose notification was lost, the CLI beside a SQLite gateway) is honoured at once, and
/// the old one refused within the cache's lifetime; a change the gateway is told of (the admin
/// API: `ReceiptCredentialsEndToEndTests`; another node's `NOTIFY`) drops the old key at once.
@Suite(.serialized) struct ReceiptCredentialCacheTests {
    static let publicURL = "https://push.example.com"

    /// Stores `credentials` as another node or the CLI would, telling this gateway nothing.
    static func setElsewhere(_ gw: RunningGateway, appID: Int64, _ credentials: CallbackCredentials) async throws {
        let elsewhere = ReceiptCallbackCredentialService(
            store: gw.runtime.store, masterKey: gw.runtime.masterKey, registry: gw.runtime.config.transports.registry,
            clock: SystemClock())
        try await elsewhere.set(credentials, appID: appID, channel: .huawei)
    }

    static func post(
        _ gw: RunningGateway, appID: Int64, tag: String, token: String, _ credentials: CallbackCredentials
    ) async throws -> Int {
        try await ReceiptCredentialsEndToEndTests.postReceipt(
            gw, appID: appID, tag: tag, token: token, userName: credentials.userName, key: credentials.key
        ).status
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func aKeyChangedElsewhereVerifiesAtOnceAndTheOldOneStopsWithinTheLifetime(_ database: PluginStoreBackend)
        async throws
    {
        let clock = ManualClock(Date())
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], clock: clock, database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.cache")
        let tag = try await ReceiptCredentialsEndToEndTests.sentMessage(gw, key: key, token: "huawei-cache-1")
        let first = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: appID, channel: .huawei)
        func post(_ credentials: CallbackCredentials) async throws -> Int {
            try await Self.post(gw, appID: appID, tag: tag, token: "huawei-cache-1", credentials)
        }
        #expect(try await post(first) == 200)

        let second = CallbackCredentials(userName: "ops", key: "second-key-0123456789")
        try await Self.setElsewhere(gw, appID: appID, second)
        // The kept pair is the old one until its lifetime ends: the documented bound.
        #expect(try await post(first) == 200)
        // The new pair verifies at once: refused under the kept pair, it is checked against the
        // stored one...
        #expect(try await post(second) == 200)
        // ...which is kept from then on: the old key is refused.
        #expect(try await post(first) == 401)

        // Changed again while only the old key is presented: refused once the lifetime is over,
        // without anyone presenting the new key first.
        let third = CallbackCredentials(userName: "ops", key: "third-key-0123456789")
        try await Self.setElsewhere(gw, appID: appID, third)
        #expect(try await post(second) == 200)
        clock.advance(by: ReceiptCallbackCredentialCache.defaultLifetime + 1)
        #expect(try await post(second) == 401)
        #expect(try await post(third) == 200)
        // A forged signature is still refused after the second look.
        #expect(try await post(CallbackCredentials(userName: "ops", key: "forged-key-0123456789")) == 401)
    }

    @Test(arguments: PluginStoreBackend.allCases)
    func aChangeAnotherNodePublishesDropsTheKeptKeyAtOnce(_ database: PluginStoreBackend) async throws {
        // The clock stands still: only the published change can end the kept pair.
        let gw = try await TestGateway.start(
            environment: ["TUISONG_RECEIPTS_PUBLIC_URL": Self.publicURL], clock: ManualClock(Date()),
            database: database)
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.cache2")
        let tag = try await ReceiptCredentialsEndToEndTests.sentMessage(gw, key: key, token: "huawei-cache-2")
        let first = try await gw.runtime.adminAPI.receiptCredentials.credentials(appID: appID, channel: .huawei)
        func post(_ credentials: CallbackCredentials) async throws -> Int {
            try await Self.post(gw, appID: appID, tag: tag, token: "huawei-cache-2", credentials)
        }
        #expect(try await post(first) == 200)

        let second = CallbackCredentials(userName: "ops", key: "published-key-0123456789")
        try await Self.setElsewhere(gw, appID: appID, second)
        // What the other node's admin API or CLI publishes after its change (on PostgreSQL it
        // comes back through NOTIFY, a moment later).
        await gw.runtime.store.publish(.receiptCallbackCredentials(appID: appID))
        var status = try await post(first)
        // SQLite tells its own process's subscribers as it publishes: refused at once.
        if database == .sqlite { #expect(status == 401) }
        let deadline = ContinuousClock.now + .seconds(20)
        while status == 200, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(50))
            status = try await post(first)
        }
        #expect(status == 401)
        #expect(try await post(second) == 200)
    }
}
