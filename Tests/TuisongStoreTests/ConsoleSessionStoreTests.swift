import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Console sessions")
struct ConsoleSessionStoreTests {
    static let limits = ConsoleSessionLimits(idleTimeout: 600, absoluteTimeout: 3600, maxSessions: 3)
    static let start = ManualClock.defaultStart

    static func session(_ name: String, at date: Date = start) -> ConsoleSessionRecord {
        ConsoleSessionRecord(key: "key-\(name)", csrfToken: "csrf-\(name)", createdAt: date, lastSeen: date)
    }

    @Test("A session is created, found, refreshed at most once a minute, and deleted", arguments: Backend.allCases)
    func lifecycle(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let limits = Self.limits
            #expect(limits.lastSeenResolution == 60)
            try await store.createConsoleSession(Self.session("a"), limits: limits)
            let found = try #require(try await store.consoleSession(key: "key-a", now: Self.start, limits: limits))
            #expect(found == Self.session("a"))
            #expect(try await store.consoleSession(key: "key-unknown", now: Self.start, limits: limits) == nil)

            // Within the resolution the answer moves, the row does not.
            let soon = Self.start.addingTimeInterval(30)
            #expect(try await store.consoleSession(key: "key-a", now: soon, limits: limits)?.lastSeen == soon)
            let later = Self.start.addingTimeInterval(590)
            #expect(try await store.consoleSession(key: "key-a", now: later, limits: limits)?.lastSeen == later)
            // 590 s was recorded: 1,100 s after the start is 510 s of quiet, still live.
            let after = Self.start.addingTimeInterval(1_100)
            #expect(try await store.consoleSession(key: "key-a", now: after, limits: limits) != nil)
            // Only 1,130 s was not recorded (within a minute of 1,100): 1,701 s is 601 s after 1,100.
            #expect(
                try await store.consoleSession(key: "key-a", now: after.addingTimeInterval(30), limits: limits) != nil)
            #expect(
                try await store.consoleSession(key: "key-a", now: after.addingTimeInterval(601), limits: limits) == nil,
                "idle past the timeout since the last recorded request")
            #expect(try await store.consoleSessionCount() == 0, "an expired session found is deleted")

            try await store.createConsoleSession(Self.session("b"), limits: limits)
            #expect(try await store.deleteConsoleSession(key: "key-b"))
            #expect(try await store.deleteConsoleSession(key: "key-b") == false)
            #expect(try await store.consoleSession(key: "key-b", now: Self.start, limits: limits) == nil)
        }
    }

    @Test("A session ends after its absolute lifetime even when active", arguments: Backend.allCases)
    func absoluteTimeout(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let limits = Self.limits
            try await store.createConsoleSession(Self.session("a"), limits: limits)
            var now = Self.start
            for _ in 0..<7 {
                now += 500
                #expect(try await store.consoleSession(key: "key-a", now: now, limits: limits) != nil)
            }
            now += 101  // 3,601 s after creation
            #expect(try await store.consoleSession(key: "key-a", now: now, limits: limits) == nil)
        }
    }

    @Test(
        "Creating a session purges expired ones and ends the least recently seen at the cap",
        arguments: Backend.allCases)
    func cap(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let limits = Self.limits
            try await store.createConsoleSession(Self.session("old"), limits: limits)
            let t1 = Self.start.addingTimeInterval(700)  // "old" is idle past 600 s by now
            try await store.createConsoleSession(Self.session("a", at: t1), limits: limits)
            #expect(try await store.consoleSessionCount() == 1, "the expired session was purged")
            try await store.createConsoleSession(Self.session("b", at: t1 + 1), limits: limits)
            try await store.createConsoleSession(Self.session("c", at: t1 + 2), limits: limits)
            // "a" is seen again: "b" is now the least recently seen.
            #expect(try await store.consoleSession(key: "key-a", now: t1 + 100, limits: limits) != nil)
            try await store.createConsoleSession(Self.session("d", at: t1 + 101), limits: limits)
            #expect(try await store.consoleSessionCount() == 3)
            let now = t1 + 102
            #expect(try await store.consoleSession(key: "key-b", now: now, limits: limits) == nil)
            for name in ["a", "c", "d"] {
                #expect(try await store.consoleSession(key: "key-\(name)", now: now, limits: limits) != nil, "\(name)")
            }
            await #expect(throws: StoreError.self) {
                try await store.createConsoleSession(Self.session("d", at: now), limits: limits)
            }
        }
    }

    @Test("Expired sessions are purged and every session can be ended at once", arguments: Backend.allCases)
    func purgeAndDeleteAll(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let limits = Self.limits
            try await store.createConsoleSession(Self.session("a"), limits: limits)
            try await store.createConsoleSession(Self.session("b", at: Self.start + 300), limits: limits)
            #expect(try await store.purgeExpiredConsoleSessions(now: Self.start + 601, limits: limits) == 1)
            #expect(try await store.consoleSessionCount() == 1)
            try await store.createConsoleSession(Self.session("c", at: Self.start + 400), limits: limits)
            #expect(try await store.deleteAllConsoleSessions() == 2)
            #expect(try await store.consoleSessionCount() == 0)
        }
    }
}
