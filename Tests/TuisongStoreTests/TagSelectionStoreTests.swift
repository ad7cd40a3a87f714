import Foundation
import Testing
import TuisongCore

@testable import TuisongSQLStore

/// A tag selection (JPush's `tag`, `tag_and`, `tag_not`) read page by page on both databases:
/// every page full until the last, each valid matching device once, in id order, whatever the
/// page size; counts bounded and per environment.
@Suite struct TagSelectionStoreTests {
    @Test func aSelectionMatchesByItsThreeLists() {
        let selection = TagSelection(anyOf: ["a", "b"], allOf: ["c"], noneOf: ["d"])
        #expect(selection.matches(["a", "c"]) && selection.matches(["b", "c", "x"]))
        #expect(!selection.matches(["a"]) && !selection.matches(["c"]) && !selection.matches(["a", "c", "d"]))
        #expect(TagSelection().matches([]) && TagSelection(noneOf: ["d"]).matches(["a"]))
        #expect(selection.summary == "tags: any of a, b; all of c; none of d")
        #expect(Audience.tagSelection(TagSelection()).summary == "all devices")
    }

    @Test(arguments: Backend.allCases)
    func pagesHoldEveryMatchingDeviceOnce(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            let layout: [(tags: [String], environment: PushEnvironment)] = [
                (["a"], .production), (["b"], .production), (["a", "b"], .production), (["a", "c"], .production),
                ([], .production), (["b", "c"], .production), (["a", "b", "c"], .production), (["a"], .sandbox),
                (["a"], .production), (["c"], .production), (["a", "b"], .production), (["b"], .production),
            ]
            var devices: [(id: Int64, tags: Set<String>, environment: PushEnvironment)] = []
            for (index, device) in layout.enumerated() {
                let registered = try await store.registerDevice(
                    appID: appID,
                    DeviceRegistration(
                        token: token(index + 1), environment: device.environment, tags: device.tags.map(tag),
                        channel: .apns)
                ).device
                devices.append((registered.id, Set(device.tags), device.environment))
            }
            // Another app's devices with the same tags are never read.
            let other = try await makeApp(store, "other").id
            _ = try await store.registerDevice(
                appID: other,
                DeviceRegistration(token: token(99), environment: .production, tags: [tag("a")], channel: .apns))
            let gone = devices[8].id
            try await store.sharedDatabase.write { db in
                try db.execute("UPDATE devices SET invalidated_at = 1 WHERE id = ?", [.integer(gone)])
            }

            let selections = [
                TagSelection(anyOf: ["a", "b"]), TagSelection(anyOf: ["a", "b"], noneOf: ["c"]),
                TagSelection(allOf: ["a", "b"]), TagSelection(allOf: ["a", "b", "c"]), TagSelection(noneOf: ["a"]),
                TagSelection(anyOf: ["a", "missing"]), TagSelection(allOf: ["a", "missing"]),
                TagSelection(anyOf: ["missing"]), TagSelection(anyOf: ["a"], allOf: ["c"], noneOf: ["b"]),
                TagSelection(noneOf: ["missing"]),
            ]
            for selection in selections {
                let expected = devices.filter { $0.id != gone && selection.matches($0.tags) }
                for limit in [1, 2, 3, 20] {
                    var read: [Int64] = []
                    var cursor: Int64 = 0
                    while true {
                        let page = try await store.audiencePage(
                            appID: appID, audience: .tagSelection(selection), environment: nil, after: cursor,
                            limit: limit)
                        #expect(page.allSatisfy { $0.skipReason == nil && $0.deviceID == $0.position })
                        read += page.map(\.position)
                        guard page.count == limit, let last = page.last else { break }
                        cursor = last.position
                    }
                    #expect(read == expected.map(\.id), "\(selection.summary), pages of \(limit)")
                }
                let production = expected.filter { $0.environment == .production }.count
                #expect(
                    try await store.audienceCount(
                        appID: appID, audience: .tagSelection(selection), environment: .production, upTo: nil)
                        == production, "\(selection.summary)")
                #expect(
                    try await store.audienceCount(
                        appID: appID, audience: .tagSelection(selection), environment: nil, upTo: 2)
                        == min(2, expected.count))
            }
            // A sandbox push skips the selection's production devices, counted as every query
            // audience's are.
            let sandboxPage = try await store.audiencePage(
                appID: appID, audience: .tagSelection(TagSelection(anyOf: ["a"])), environment: .sandbox, after: 0,
                limit: 20)
            #expect(sandboxPage.filter { $0.skipReason == nil }.map(\.position) == [devices[7].id])
            #expect(sandboxPage.filter { $0.skipReason == "other_environment" }.count == 5)
        }
    }

    /// A selection that keeps few of its driver's candidates reads them in rounds and still
    /// fills its pages.
    @Test(arguments: Backend.allCases)
    func aSparseSelectionStillFillsItsPages(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let appID = try await makeApp(store).id
            var kept: [Int64] = []
            for n in 1...300 {
                let tags = n % 7 == 0 ? ["news", "vip"] : ["news"]
                let device = try await store.registerDevice(
                    appID: appID,
                    DeviceRegistration(token: token(n), environment: .production, tags: tags.map(tag), channel: .apns)
                ).device
                if n % 7 == 0 { kept.append(device.id) }
            }
            let selection = TagSelection(allOf: ["news", "vip"])
            let first = try await store.audiencePage(
                appID: appID, audience: .tagSelection(selection), environment: nil, after: 0, limit: 10)
            #expect(first.map(\.position) == Array(kept.prefix(10)))
            let excluded = try await store.audiencePage(
                appID: appID, audience: .tagSelection(TagSelection(anyOf: ["news"], noneOf: ["vip"])),
                environment: nil, after: 0, limit: 50)
            #expect(excluded.count == 50 && excluded.allSatisfy { !kept.contains($0.position) })
            #expect(
                try await store.audienceCount(
                    appID: appID, audience: .tagSelection(selection), environment: nil, upTo: nil) == kept.count)
        }
    }
}
