import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// The engine holds its claims to the store's pace while they find work (`WorkQueue.claimPace`):
/// a message accepted just after a claim took another waits for the pace, and is then claimed.
@Suite struct ClaimPaceTests {
    @Test func aClaimAfterOneThatFoundWorkWaitsForTheStoresPace() async throws {
        let setup = try await OutageSetup.make(.sqlite, devices: 1)
        defer { setup.cleanUp() }
        let store = OutageStore(setup.store)
        store.pace.withLock { $0 = .milliseconds(300) }
        let engine = setup.engine(store, ScriptedTransport())
        try await engine.start()
        _ = try await engine.submit(setup.job)
        try await waitUntil("the first message claimed", within: .seconds(10)) {
            store.claims.withLock { $0.contains { $0.claimed > 0 } }
        }
        let second = try await engine.submit(setup.job)
        let status = try await DeliveryWait.completed(engine, second.id, timeout: .seconds(30))
        await engine.stop()
        #expect(status.counts.delivered == 1)
        let working = store.claims.withLock { $0.filter { $0.claimed > 0 } }
        #expect(working.count == 2)
        if working.count == 2 {
            let gap = working[1].began - working[0].began
            // The pace runs from the start of the pass that made the first claim, a moment
            // before the claim itself.
            #expect(gap >= .milliseconds(250), "the second claim came \(gap) after the first")
        }
    }
}
