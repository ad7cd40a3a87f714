import Foundation
import Testing
import TuisongCore

@testable import TuisongStore

/// The list lookups written once (`SQLStoreBackend`): a list longer than one `SQLList` chunk
/// (512 values), with repeats, unknown values and another app's rows, answers as one query
/// would, on both databases.
@Suite struct ListLookupTests {
    @Test(arguments: Backend.allCases)
    func listsLongerThanAChunkAnswerAsOneQuery(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store, "lists")
            let other = try await makeApp(store, "other")
            let count = 700
            _ = try await store.registerDevices(
                appID: app.id,
                (0..<count).map { DeviceRegistration(token: token($0), environment: .production, channel: .apns) })
            let foreign = try await store.registerDevice(
                appID: other.id, DeviceRegistration(token: token(count), environment: .production, channel: .apns)
            ).device
            var ids: [Int64] = []
            for n in 0..<count {
                guard let device = try await store.device(appID: app.id, token: token(n)) else {
                    Issue.record("device \(n) not registered")
                    return
                }
                ids.append(device.id)
            }
            // Repeats, an unknown id and another app's device: left out, each device once, by id.
            let asked = ids.reversed() + ids.prefix(20) + [999_999, foreign.id]
            #expect(try await store.devices(appID: app.id, ids: asked).map(\.id) == ids.sorted())

            let names = (0..<count).map { "user\($0)" }
            for name in names where name.hasSuffix("1") || name.hasSuffix("7") {
                _ = try await store.createAccount(appID: app.id, account: name)
            }
            _ = try await store.createAccount(appID: other.id, account: "user0")
            let expected = Set(names.filter { $0.hasSuffix("1") || $0.hasSuffix("7") })
            let found = try await store.existingAccounts(
                appID: app.id, among: names + names.prefix(30) + ["nobody"])
            #expect(found == expected)

            // Devices bound to 600 accounts, counted across chunks (each device once).
            for n in 0..<600 {
                _ = try await store.bindDevice(
                    appID: app.id, account: "user\(n)",
                    registration: DeviceRegistration(token: token(n), environment: .production, channel: .apns),
                    credentialSelector: nil)
            }
            let accounts = Audience.accounts((0..<count).map { "user\($0)" } + ["user1", "nobody"])
            #expect(try await store.audienceCount(appID: app.id, audience: accounts) == 600)
            #expect(
                try await store.audienceCount(appID: app.id, audience: accounts, environment: .sandbox, upTo: nil) == 0)
            #expect(
                try await store.audienceCount(appID: app.id, audience: accounts, environment: .production, upTo: 1)
                    == 1,
                "counted across chunks, stopping at the limit")
        }
    }
}
