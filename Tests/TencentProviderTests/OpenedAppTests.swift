import Foundation
import Testing
import TuisongCore
import TuisongPlugin
import TuisongPluginTestKit

@testable import TencentProvider

/// A call's app and opened secret key are kept per SDKAppID (`OpenedApps`): forgotten when the
/// app changes, and kept a second at most when no notice comes.
@Suite struct OpenedAppTests {
    static let sdkAppID: Int64 = 1_400_000_000

    @Test("A changed secret key is used at once when the change is told, within a second when it is not")
    func changedKeyReachesTheHotPath() async throws {
        let clock = ManualClock(Date(timeIntervalSince1970: 1_800_000_000))
        let temporary = try TemporaryStore(providers: [TencentProvider.self], clock: clock)
        defer { temporary.remove() }
        let sealer = try TestSealer()
        let changes = AppChangeNotices()
        let provider = try TencentProvider(
            context: temporary.context(
                gateway: RecordingGateway(store: temporary.store, clock: clock), secrets: sealer,
                appChanges: changes))
        var app = try await temporary.store.createApp(
            name: "t", bundleID: "com.example.t", apiKeyHash: UUID().uuidString)
        func setKey(_ key: String) async throws {
            app.vendorSettings["tencent"] = try TencentKeys(
                sdkAppID: Self.sdkAppID, secretKey: key, adminIdentifier: "administrator"
            ).settings(appID: app.id, sealer: sealer)
            try await temporary.store.updateApp(app)
        }
        func code(signedWith key: String) async throws -> Int? {
            let sig = try PythonUserSig.make(
                sdkAppID: Self.sdkAppID, key: key, identifier: "administrator",
                time: Int64(clock.now.timeIntervalSince1970))
            do {
                let caller = try await provider.authenticate(
                    TencentCallParameters(sdkAppID: Self.sdkAppID, identifier: "administrator", userSig: sig))
                #expect(caller.app.id == app.id && caller.keys.secretKey == key)
                return nil
            } catch let error as TencentError {
                return error.code
            }
        }

        try await setKey("key-one")
        #expect(try await code(signedWith: "key-one") == nil)
        // Changed where no notice reaches this node (the CLI beside a SQLite gateway): the
        // opened key is kept, then read again once a second has passed.
        try await setKey("key-two")
        #expect(try await code(signedWith: "key-one") == nil, "kept, not read per call")
        #expect(try await code(signedWith: "key-two") == 70009)
        clock.advance(by: 1.5)
        #expect(try await code(signedWith: "key-one") == 70009)
        #expect(try await code(signedWith: "key-two") == nil)
        // Told (the admin API, or another node through the change feed): at once.
        try await setKey("key-three")
        changes.changed(appID: app.id)
        #expect(try await code(signedWith: "key-two") == 70009)
        #expect(try await code(signedWith: "key-three") == nil)
        // The app no longer Tencent's: its SDKAppID is unknown at once.
        app.vendorSettings["tencent"] = nil
        try await temporary.store.updateApp(app)
        changes.changed(appID: app.id)
        #expect(try await code(signedWith: "key-three") == 60006)
    }
}
