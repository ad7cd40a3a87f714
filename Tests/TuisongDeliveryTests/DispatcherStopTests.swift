import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongPostgres

@testable import TuisongDelivery
@testable import TuisongPostgresStore

/// A stopping engine tells its store that the dispatcher stopped (`WorkQueue.dispatcherStopped`):
/// on PostgreSQL the messages the store claimed for it as they were stored (`AcceptedClaims`)
/// and that no run started go back to the queue at once, for another node, instead of waiting
/// out their lease.
@Suite struct DispatcherStopTests {
    @Test func aStoppingEngineGivesBackWhatItsStoreClaimedForIt() async throws {
        let setup = try await OutageSetup.make(.postgresql, devices: 1)
        defer { setup.cleanUp() }
        let store = OutageStore(setup.store)
        let engine = setup.engine(store, ScriptedTransport())
        try await engine.start()
        var job = setup.job
        job.audience = .tokens([testToken(1)])
        let first = try await engine.submit(job)
        _ = try await DeliveryWait.completed(engine, first.id, timeout: .seconds(30))

        // Stored while the dispatcher cannot claim (the database is away for the engine): the
        // store claimed it for this node, and it waits.
        store.isAway.store(true, ordering: .releasing)
        let waiting = try await setup.store.createMessage(job, state: .queued)
        let connection = try PostgresConnection(url: try #require(setup.database).url)
        func owner() throws -> String? {
            try connection.execute("SELECT owner FROM message_slices WHERE message_id = \(waiting.id) AND slice = 0")
                .rows.first?["owner"]?.string
        }
        #expect(try owner() == (setup.store as? PostgresStore)?.nodeID)

        await engine.stop()
        #expect(try owner() == nil, "given back when the dispatcher stopped")
    }
}
