import Foundation
import Testing
import TuisongCore

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// The shape of the gateway's registration benchmark, checked for correctness only: many
/// workers, each awaiting its own registration before sending the next, then lookups of
/// everything. Nothing here is timed (a timed assertion would be flaky on a shared machine);
/// throughput is measured separately with a release build.
@Suite("Registration and lookup load (functional, untimed)")
struct LoadTests {
    @Test("64 workers register 12,800 distinct devices, then look every one up")
    func registerThenLookUp() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        let workers = 64
        let perWorker = 200

        let created = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var created = 0
                    for i in 0..<perWorker {
                        let n = worker * perWorker + i
                        let registration = DeviceRegistration(
                            token: token(n), environment: n % 3 == 0 ? .production : .sandbox,
                            user: "user-\(n % 1000)", tags: n % 5 == 0 ? [tag("t\(n % 7)")] : nil, channel: .apns)
                        if try await store.registerDevice(appID: app.id, registration).created {
                            created += 1
                        }
                    }
                    return created
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(created == workers * perWorker)
        #expect(try await store.deviceCount(appID: app.id) == workers * perWorker)

        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    var mismatches = 0
                    for i in 0..<perWorker {
                        let n = worker * perWorker + i
                        let device = try await store.device(appID: app.id, token: token(n))
                        if device?.user != "user-\(n % 1000)" { mismatches += 1 }
                    }
                    return mismatches
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)

        var tagged = 0
        var cursor: String?
        repeat {
            let page = try await store.devices(
                appID: app.id, tag: tag("t0"), cursor: cursor, limit: 500)
            tagged += page.items.count
            cursor = page.nextCursor
        } while cursor != nil
        #expect(tagged == (0..<(workers * perWorker)).filter { $0 % 5 == 0 && $0 % 7 == 0 }.count)
    }
}
