import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongDelivery

/// The engine's register of runs keeps what a claim hands the store — the keys of every run, and
/// how many send a slice (bounded per node) — as runs come and go, instead of building it from
/// the runs at each claim.
@Suite struct RunningMessagesTests {
    @Test func theKeysAndTheSliceCountFollowTheRunsThatComeAndGo() async throws {
        let fixture = try await EngineFixture.make()
        defer { fixture.cleanUp() }
        let engine = fixture.engine(ScriptedTransport())
        let app = try #require(try await fixture.store.app(id: fixture.appID))
        func run(_ messageID: Int64, _ slice: WorkSlice) -> MessageRun {
            let record = MessageRecord.created(
                id: messageID, job: fixture.job(.all), state: .sending, createdAt: Date())
            return MessageRun(engine: engine, record: record, app: app, slice: slice)
        }
        let whole = run(1, .whole(after: 0))
        let firstSlice = run(2, WorkSlice(id: 1, after: 0, through: 100, fence: 1, leaseUntil: Date()))
        let secondSlice = run(2, WorkSlice(id: 2, after: 100, through: nil, fence: 1, leaseUntil: Date()))

        let runs = RunningMessages()
        #expect(runs.insert(whole) && runs.insert(firstSlice) && runs.insert(secondSlice))
        let held = runs.claimView()
        #expect(held.keys == [whole.key, firstSlice.key, secondSlice.key])
        #expect(held.sliceRuns == 2)
        #expect(runs.count == 3)

        // A slice already running is not registered twice, and counts once.
        #expect(!runs.insert(run(2, WorkSlice(id: 1, after: 0, through: 100, fence: 2, leaseUntil: Date()))))
        #expect(runs.claimView().sliceRuns == 2)

        runs.remove(firstSlice.key)
        runs.remove(whole.key)
        runs.remove(whole.key)  // gone already: nothing changes
        let after = runs.claimView()
        #expect(after.keys == [secondSlice.key])
        #expect(after.sliceRuns == 1)
        #expect(runs.count == 1)
        // The view a claim took is its own: later changes do not reach it.
        #expect(held.keys.count == 3)
    }
}
