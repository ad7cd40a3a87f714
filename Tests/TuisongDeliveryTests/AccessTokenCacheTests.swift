import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongDelivery

/// Access tokens: one fetch however many sends ask at once, refreshed in the background
/// before expiry, dropped when the service refuses one.
@Suite struct AccessTokenCacheTests {
    let credential = ChannelCredential(id: 7, channel: .fcm, vendorAppID: "p", clientID: "a@p", secret: [1])

    /// A token endpoint double: counts fetches, answers with numbered tokens of `lifetime`,
    /// or with `failure`; each fetch may be held until released.
    final class Endpoint: Sendable {
        let clock: ManualClock
        let lifetime: TimeInterval
        let fetches = Atomic<Int>(0)
        let failure = Mutex<AccessTokenFailure?>(nil)
        let gate = Mutex<[CheckedContinuation<Void, Never>]>([])
        let holding = Atomic<Bool>(false)

        init(clock: ManualClock, lifetime: TimeInterval = 3600) {
            self.clock = clock
            self.lifetime = lifetime
        }

        var fetch: AccessTokenCache.Fetch {
            { _ in
                let number = self.fetches.add(1, ordering: .relaxed).newValue
                if self.holding.load(ordering: .relaxed) {
                    await withCheckedContinuation { continuation in self.gate.withLock { $0.append(continuation) } }
                }
                if let failure = self.failure.withLock({ $0 }) { return .failure(failure) }
                return .success(
                    AccessToken(value: "token-\(number)", expires: self.clock.now.addingTimeInterval(self.lifetime)))
            }
        }

        func release() {
            for waiter in gate.withLock({ gate in
                defer { gate = [] }
                return gate
            }) { waiter.resume() }
        }

        var waiting: Int { gate.withLock { $0.count } }
    }

    @Test func concurrentSendsShareOneFetch() async throws {
        let clock = ManualClock()
        let endpoint = Endpoint(clock: clock)
        endpoint.holding.store(true, ordering: .relaxed)
        let cache = AccessTokenCache(clock: clock)
        let credential = self.credential
        let results = Task {
            await withTaskGroup(of: Result<AccessToken, AccessTokenFailure>.self) { group in
                for _ in 0..<50 { group.addTask { await cache.token(for: credential, fetch: endpoint.fetch) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await waitUntil { endpoint.waiting == 1 }
        endpoint.release()
        let tokens = await results.value.map { try? $0.get().value }
        #expect(tokens.count == 50)
        #expect(Set(tokens) == ["token-1"])
        #expect(endpoint.fetches.load(ordering: .relaxed) == 1)
        #expect(cache.fetchCount == 1)
    }

    @Test func refreshedInTheBackgroundBeforeExpiry() async throws {
        let clock = ManualClock()
        let endpoint = Endpoint(clock: clock, lifetime: 3600)
        let cache = AccessTokenCache(clock: clock)
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-1")
        clock.advance(by: 3000)  // before the refresh point (3600 − 300)
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-1")
        #expect(endpoint.fetches.load(ordering: .relaxed) == 1)
        clock.advance(by: 400)  // past it, still valid: served at once, refreshed behind
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-1")
        try await waitUntil { cache.fetchCount == 2 }
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-2")
        // Expired without a refresh: the send waits for a new token.
        clock.advance(by: 4000)
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-3")
    }

    @Test func aRefusedTokenIsFetchedAgainOnlyOnce() async throws {
        let clock = ManualClock()
        let endpoint = Endpoint(clock: clock)
        let cache = AccessTokenCache(clock: clock)
        let first = try await cache.token(for: credential, fetch: endpoint.fetch).get()
        cache.invalidate(first, of: credential)
        let second = try await cache.token(for: credential, fetch: endpoint.fetch).get()
        #expect(second.value == "token-2")
        // A late 401 for the old token does not drop the new one.
        cache.invalidate(first, of: credential)
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get() == second)
        #expect(endpoint.fetches.load(ordering: .relaxed) == 2)
    }

    @Test func aRefusalReachesEveryWaiter() async throws {
        let clock = ManualClock()
        let endpoint = Endpoint(clock: clock)
        endpoint.failure.withLock { $0 = .refused(.service("invalid_grant")) }
        endpoint.holding.store(true, ordering: .relaxed)
        let cache = AccessTokenCache(clock: clock)
        let credential = self.credential
        let results = Task {
            await withTaskGroup(of: Result<AccessToken, AccessTokenFailure>.self) { group in
                for _ in 0..<5 { group.addTask { await cache.token(for: credential, fetch: endpoint.fetch) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
        }
        try await waitUntil { endpoint.waiting == 1 }
        endpoint.release()
        for result in await results.value { #expect(result == .failure(.refused(.service("invalid_grant")))) }
        #expect(cache.failureCount == 1)
        // The next send tries again.
        endpoint.failure.withLock { $0 = nil }
        endpoint.holding.store(false, ordering: .relaxed)
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-2")
    }

    @Test func credentialsHaveTheirOwnTokens() async throws {
        let clock = ManualClock()
        let endpoint = Endpoint(clock: clock)
        let cache = AccessTokenCache(clock: clock)
        var other = credential
        other.id = 8
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-1")
        #expect(try await cache.token(for: other, fetch: endpoint.fetch).get().value == "token-2")
        #expect(try await cache.token(for: credential, fetch: endpoint.fetch).get().value == "token-1")
    }
}
