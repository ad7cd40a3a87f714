import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Provider tokens")
struct ProviderTokenStoreTests {
    static let start = ManualClock.defaultStart
    static let window: TimeInterval = 20 * 60

    static func token(_ name: String, at offset: TimeInterval) -> SharedProviderToken {
        SharedProviderToken(token: "jwt-\(name)", issuedAt: start.addingTimeInterval(offset))
    }

    static func offer(
        _ store: any GatewayStore, _ token: SharedProviderToken, team: String = "T", replacing: Date? = nil
    ) async throws -> SharedProviderToken {
        try await store.offerProviderToken(teamID: team, keyID: "K", token, refreshWindow: window, replacing: replacing)
    }

    static func current(_ store: any GatewayStore, key: String = "K", newerThan: Date = .distantPast) async throws
        -> SharedProviderToken?
    {
        try await store.currentProviderToken(teamID: "T", keyID: key, newerThan: newerThan)
    }

    @Test("The first offer is stored; a later one within the window loses to it", arguments: Backend.allCases)
    func oneWinner(_ backend: Backend) async throws {
        try await withStore(backend) { (store: any GatewayStore) async throws in
            #expect(try await Self.current(store) == nil)
            let a = Self.token("a", at: 0)
            #expect(try await Self.offer(store, a) == a)
            let b = Self.token("b", at: 5)
            #expect(
                try await Self.offer(store, b) == a,
                "a token signed at the same time as the stored one loses to it")
            #expect(try await Self.current(store) == a)
            #expect(try await Self.current(store, newerThan: a.issuedAt) == nil)
            #expect(try await Self.current(store, newerThan: Self.start - 1) == a)
            // Other keys and teams have their own.
            #expect(try await Self.current(store, key: "other") == nil)
            #expect(
                try await Self.offer(store, b, team: "U") == b)
        }
    }

    @Test(
        "A token due for refresh is replaced, an older offer never replaces a newer token", arguments: Backend.allCases)
    func refresh(_ backend: Backend) async throws {
        try await withStore(backend) { (store: any GatewayStore) async throws in
            let a = Self.token("a", at: 0)
            _ = try await Self.offer(store, a)
            let b = Self.token("b", at: 45 * 60)
            #expect(try await Self.offer(store, b) == b)
            let late = Self.token("late", at: 45 * 60 + 10)
            #expect(try await Self.offer(store, late) == b)
            let old = Self.token("old", at: 30)
            #expect(try await Self.offer(store, old) == b)
            #expect(try await Self.current(store, newerThan: a.issuedAt) == b)
        }
    }

    @Test("A token APNs reported expired is replaced within the window, once", arguments: Backend.allCases)
    func replacing(_ backend: Backend) async throws {
        try await withStore(backend) { (store: any GatewayStore) async throws in
            let a = Self.token("a", at: 0)
            _ = try await Self.offer(store, a)
            let b = Self.token("b", at: 60)
            #expect(
                try await Self.offer(store, b, replacing: a.issuedAt)
                    == b)
            // Another node that saw the same token expire adopts the replacement.
            let c = Self.token("c", at: 61)
            #expect(
                try await Self.offer(store, c, replacing: a.issuedAt)
                    == b)
        }
    }

    @Test("Concurrent offers all get the one token that was kept", arguments: Backend.allCases)
    func concurrentOffers(_ backend: Backend) async throws {
        try await withStore(backend) { (store: any GatewayStore) async throws in
            let answers = try await withThrowingTaskGroup(of: SharedProviderToken.self) { group in
                for n in 0..<8 {
                    group.addTask {
                        try await store.offerProviderToken(
                            teamID: "T", keyID: "K", Self.token("n\(n)", at: Double(n)), refreshWindow: Self.window,
                            replacing: nil)
                    }
                }
                var answers: [SharedProviderToken] = []
                for try await answer in group { answers.append(answer) }
                return answers
            }
            #expect(Set(answers).count == 1)
            #expect(try await Self.current(store) == answers[0])
        }
    }
}
