import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Devices")
struct DeviceStoreTests {
    @Test("Registering twice upserts: same row, created once, nil fields left unchanged", arguments: Backend.allCases)
    func upsertIsIdempotent(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
            let app = try await makeApp(store)
            let first = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(
                    token: token(1), environment: .sandbox, user: "alice", locale: "zh_CN", channel: .apns))
            #expect(first.created)
            #expect(first.device.token == token(1).hex)
            #expect(first.device.user == "alice")
            #expect(first.device.createdAt == clock.now)

            clock.advance(by: 5)
            let second = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(1), environment: .production, channel: .apns))
            #expect(!second.created)
            #expect(second.device.id == first.device.id)
            #expect(second.device.environment == .production)
            #expect(second.device.user == "alice")
            #expect(second.device.locale == "zh_CN")
            #expect(second.device.createdAt == first.device.createdAt)
            #expect(second.device.updatedAt == clock.now)

            let third = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(token: token(1), environment: .production, user: "bob", channel: .apns))
            #expect(third.device.user == "bob")
            #expect(third.device.locale == "zh_CN")

            #expect(try await storedDeviceCount(store, appID: app.id) == 1)
            #expect(try await store.device(appID: app.id, token: token(1)) == third.device)
            #expect(try await store.device(id: first.device.id) == third.device)
        }
    }

    @Test("The same token in two apps is two devices", arguments: Backend.allCases)
    func tokensAreScopedByApp(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let a = try await makeApp(store, "a")
            let b = try await makeApp(store, "b")
            let inA = try await store.registerDevice(
                appID: a.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
            let inB = try await store.registerDevice(
                appID: b.id, DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns))
            #expect(inA.created && inB.created)
            #expect(inA.device.id != inB.device.id)
            #expect(try await store.device(appID: a.id, token: token(2)) == nil)
        }
    }

    @Test("Re-registering an invalidated device clears invalidatedAt and the reason", arguments: Backend.allCases)
    func reregisterClearsInvalidation(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
            let app = try await makeApp(store)
            let (device, _) = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(3), environment: .production, channel: .apns))

            clock.advance(by: 10)
            #expect(try await invalidateDevice(store, id: device.id, reason: "Unregistered"))
            let invalidated = try #require(await store.device(id: device.id))
            #expect(invalidated.invalidatedAt == clock.now)
            #expect(invalidated.invalidReason == "Unregistered")

            clock.advance(by: 10)
            let (again, created) = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(3), environment: .production, channel: .apns))
            #expect(!created)
            #expect(again.invalidatedAt == nil)
            #expect(again.invalidReason == nil)
            #expect(try await store.device(id: device.id)?.invalidatedAt == nil)
        }
    }

    @Test("A 410 older than the latest registration does not invalidate the device", arguments: Backend.allCases)
    func staleInvalidationIsIgnored(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
            let app = try await makeApp(store)
            let before = clock.now
            clock.advance(by: 30)
            let (device, _) = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(4), environment: .production, channel: .apns))
            #expect(
                try await invalidateDevice(store, id: device.id, reason: "Unregistered", since: before)
                    == false)
            #expect(try await store.device(id: device.id)?.invalidatedAt == nil)
            #expect(
                try await invalidateDevice(store, id: device.id + 1, reason: "BadDeviceToken") == false)
        }
    }

    @Test("deleteDevice removes the device and its tag memberships", arguments: Backend.allCases)
    func delete(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id,
                DeviceRegistration(token: token(5), environment: .sandbox, tags: [tag("x")], channel: .apns))
            #expect(try await store.deleteDevice(appID: app.id, token: token(5)))
            #expect(try await store.deleteDevice(appID: app.id, token: token(5)) == false)
            #expect(try await store.device(appID: app.id, token: token(5)) == nil)
            #expect(try await storedRowCount(store, "device_tags") == 0)
        }
    }

    @Test("registerDevices stores a batch in one transaction and counts the new devices", arguments: Backend.allCases)
    func batchRegistration(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(0), environment: .sandbox, channel: .apns))
            let batch = (0..<500).map {
                DeviceRegistration(
                    token: token($0), environment: .production, tags: $0 % 2 == 0 ? [tag("even")] : nil, channel: .apns)
            }
            #expect(try await store.registerDevices(appID: app.id, batch) == 499)
            #expect(try await storedDeviceCount(store, appID: app.id) == 500)
            #expect(try await store.device(appID: app.id, token: token(0))?.environment == .production)
            let even = try await store.devices(
                appID: app.id, tag: tag("even"), cursor: nil, limit: 1000)
            #expect(even.items.count == 250)

            // All or nothing: an unknown app fails the batch and stores none of it.
            let error = await #expect(throws: StoreError.self) {
                _ = try await store.registerDevices(
                    appID: 9999, [DeviceRegistration(token: token(1), environment: .sandbox, channel: .apns)])
            }
            #expect(error?.code == .notFound)
            #expect(try await storedRowCount(store, "devices") == 500)
            #expect(try await store.registerDevices(appID: app.id, []) == 0)
        }
    }

    @Test(
        "50 tasks registering one token at once leave exactly one row, created exactly once",
        arguments: Backend.allCases)
    func concurrentSameToken(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let results = try await withThrowingTaskGroup(of: (Int64, Bool).self) { group in
                for n in 0..<50 {
                    group.addTask {
                        let (device, created) = try await store.registerDevice(
                            appID: app.id,
                            DeviceRegistration(
                                token: token(77), environment: .sandbox, user: "user-\(n)", channel: .apns))
                        return (device.id, created)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 50)
            #expect(Set(results.map(\.0)).count == 1)
            #expect(results.filter(\.1).count == 1)
            #expect(try await storedDeviceCount(store, appID: app.id) == 1)
            #expect(try await storedRowCount(store, "devices") == 1)
        }
    }

    @Test("Concurrent distinct registrations are all stored, each with its own row", arguments: Backend.allCases)
    func concurrentDistinctTokens(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let count = 2_000
            let ids = try await withThrowingTaskGroup(of: Int64.self) { group in
                for n in 0..<count {
                    group.addTask {
                        let (device, created) = try await store.registerDevice(
                            appID: app.id,
                            DeviceRegistration(token: token(n), environment: .sandbox, user: "u\(n)", channel: .apns))
                        #expect(created)
                        #expect(device.token == token(n).hex)
                        return device.id
                    }
                }
                return try await group.reduce(into: Set<Int64>()) { $0.insert($1) }
            }
            #expect(ids.count == count)
            #expect(try await storedDeviceCount(store, appID: app.id) == count)
            for n in stride(from: 0, to: count, by: 97) {
                #expect(try await store.device(appID: app.id, token: token(n))?.user == "u\(n)")
            }
        }
    }

    @Test("In one group commit, a registration for an unknown app fails alone")
    func badItemDoesNotFailItsBatch() async throws {
        let fixture = try StoreFixture(.init(maximumRegistrationBatch: 1000))
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        let outcomes = await withTaskGroup(of: (Int, StoreError.Code?).self) { group in
            for n in 0..<400 {
                group.addTask {
                    do {
                        _ = try await store.registerDevice(
                            appID: n % 10 == 0 ? 999_999 : app.id,
                            DeviceRegistration(token: token(n), environment: .sandbox, channel: .apns))
                        return (n, nil)
                    } catch {
                        return (n, (error as? StoreError)?.code ?? .unavailable)
                    }
                }
            }
            return await group.reduce(into: [Int: StoreError.Code?]()) { $0[$1.0] = $1.1 }
        }
        for (n, code) in outcomes {
            if n % 10 == 0 {
                #expect(code == .notFound, "registration \(n)")
            } else {
                #expect(code == nil, "registration \(n)")
            }
        }
        #expect(try await storedDeviceCount(store, appID: app.id) == 360)
    }
}
