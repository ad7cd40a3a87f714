import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit
import TuisongStore

@testable import TuisongAPNs

/// APNs provider tokens shared by the nodes of a gateway through the database
/// (`ProviderTokenCache` with a `ProviderTokenStore`).
@Suite struct SharedProviderTokenTests {
    /// A fresh store on `backend` (the kit's), as the nodes of a gateway share it.
    private func withTokenStore<T>(_ backend: PluginStoreBackend, _ body: (any GatewayStore) async throws -> T)
        async throws -> T
    {
        try await withTestStore(backend, poolSize: 4, body)
    }

    private func caches(_ count: Int, store: any ProviderTokenStore, clock: ManualClock) throws -> [ProviderTokenCache]
    {
        let key = try PrivateKey.generateP256()
        return try (0..<count).map { _ in
            try ProviderTokenCache(key: key, keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock, shared: store)
        }
    }

    /// Waits (up to 5 s) for a background exchange to give `cache` a token other than `old`.
    private func tokenChange(_ cache: ProviderTokenCache, from old: ProviderToken) async throws -> ProviderToken {
        for _ in 0..<500 {
            let token = try cache.providerToken()
            if token != old { return token }
            try await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("the token did not change")
        return old
    }

    /// Two keys under one key id (a key uploaded again, two test apps): each signs its own; a
    /// token signed with the other key would be InvalidProviderToken at APNs.
    @Test(arguments: PluginStoreBackend.allCases) func differentKeysUnderOneKeyIDNeverShareAToken(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        try await withTokenStore(backend) { store in
            let clock = ManualClock()
            let first = try ProviderTokenCache(
                key: try PrivateKey.generateP256(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock,
                shared: store)
            let second = try ProviderTokenCache(
                key: try PrivateKey.generateP256(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ", clock: clock,
                shared: store)
            await first.prepare()
            await second.prepare()
            #expect(try first.providerToken() != second.providerToken())
            #expect(first.mintedCount == 1 && second.mintedCount == 1)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func twoNodesSharingOneStoreSignOncePerRefresh(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        try await withTokenStore(backend) { store in
            let clock = ManualClock()
            let nodes = try caches(2, store: store, clock: clock)
            for node in nodes { await node.prepare() }
            let first = try nodes[0].providerToken()
            #expect(try nodes[1].providerToken() == first)
            #expect(nodes.map(\.mintedCount).reduce(0, +) == 1, "one signature for both nodes")

            // Within five minutes of the 50-minute refresh: the first node to look signs and
            // offers, the other adopts its token.
            clock.advance(by: 46 * 60)
            await nodes[1].prepare()
            let second = try nodes[1].providerToken()
            #expect(second != first)
            await nodes[0].prepare()
            #expect(try nodes[0].providerToken() == second)
            #expect(nodes.map(\.mintedCount).reduce(0, +) == 2)

            // The same from the request path: the token in use is returned at once, the
            // exchange runs in the background.
            clock.advance(by: 46 * 60)
            #expect(try nodes[0].providerToken() == second)
            let third = try await tokenChange(nodes[0], from: second)
            await nodes[1].prepare()
            #expect(try nodes[1].providerToken() == third)
            #expect(nodes.map(\.mintedCount).reduce(0, +) == 3)
            #expect(third.issuedAt > second.issuedAt)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func nodesPreparingAtOnceEndUpWithOneToken(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        try await withTokenStore(backend) { store in
            let clock = ManualClock()
            let nodes = try caches(4, store: store, clock: clock)
            await withTaskGroup(of: Void.self) { group in
                for node in nodes { group.addTask { await node.prepare() } }
            }
            let tokens = try Set(nodes.map { try $0.providerToken() })
            #expect(tokens.count == 1)
            #expect(nodes.map(\.mintedCount).reduce(0, +) <= 4)
        }
    }

    @Test(arguments: PluginStoreBackend.allCases) func anExpiredTokenIsReplacedOnceForEveryNode(
        _ backend: PluginStoreBackend
    )
        async throws
    {
        try await withTokenStore(backend) { store in
            let clock = ManualClock()
            let nodes = try caches(2, store: store, clock: clock)
            for node in nodes { await node.prepare() }
            let first = try nodes[0].providerToken()
            clock.advance(by: 60)
            // APNs says the token expired (a skewed clock) to both nodes: the first signs on the
            // spot and offers its token in place of the expired one; the second adopts it.
            nodes[0].invalidate(ifIssuedAt: first.issuedAt)
            let replacement = try nodes[0].providerToken()
            #expect(replacement != first)
            // Node 0 offers its replacement in the background; node 1 looks once it is stored (under
            // the key id with the key's fingerprint, as the caches share it).
            try await waitUntil("node 0's replacement is stored", within: .seconds(10)) {
                try await store.currentProviderToken(
                    teamID: "DEF123GHIJ", keyID: nodes[0].sharedKeyID, newerThan: first.issuedAt) != nil
            }
            clock.advance(by: 1)
            nodes[1].invalidate(ifIssuedAt: first.issuedAt)
            let signedByTwo = try nodes[1].providerToken()
            #expect(try await tokenChange(nodes[1], from: signedByTwo) == replacement)
        }
    }

    @Test func withoutTheStoreEachCacheSignsAlone() async throws {
        let clock = ManualClock()
        let key = try PrivateKey.generateP256()
        let alone = try ProviderTokenCache(key: key, keyID: "K", teamID: "T", clock: clock)
        await alone.prepare()
        #expect(alone.mintedCount == 0, "prepare does nothing without a store")
        _ = try alone.providerToken()
        #expect(alone.mintedCount == 1)
    }
}
