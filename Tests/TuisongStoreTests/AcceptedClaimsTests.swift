import Foundation
import Testing
import TuisongCore
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// PostgreSQL's messages claimed as they are stored (`AcceptedClaims`): a message sent whole and
/// due at once is inserted sending with its one slice claimed by the accepting node, and reaches
/// that node's dispatcher without a statement; its lease is kept and taken over as any claim's.
@Suite struct AcceptedClaimsTests {
    static func line(_ store: PostgresStore, appID: Int64, _ audience: Audience? = nil, sendAt: Date? = nil)
        async throws -> MessageRecord
    {
        try await store.createMessage(
            PushJob(
                appID: appID, vendor: "native", audience: audience ?? .tokens([String(repeating: "c", count: 64)]),
                content: PushContent(title: "t", body: "b"), options: PushOptions(), sendAt: sendAt,
                labels: ["k": "v"]),
            state: sendAt == nil ? .queued : .scheduled)
    }

    /// The message's row and its slice 0 as the database has them.
    static func stored(_ store: PostgresStore, _ id: Int64) async throws -> (
        state: String, startedAt: Int64?, total: Int64?, owner: String?, attempts: Int64?, leaseUntil: Int64?
    ) {
        try await store.read { conn in
            let row = try conn.run(
                """
                SELECT m.state, m.started_at, m.total, s.owner, s.attempts, s.lease_until
                FROM messages m LEFT JOIN message_slices s ON s.message_id = m.id AND s.slice = 0
                WHERE m.id = \(id)
                """
            ).rows[0]
            return (
                row.string("state"), row.optionalInt64("started_at"), row.optionalInt64("total"),
                row.optionalString("owner"), row.optionalInt64("attempts"), row.optionalInt64("lease_until")
            )
        }
    }

    @Test func aMessageSentWholeIsClaimedByItsNodeAsItIsStored() async throws {
        try await WorkQueueTests.withNodes(2, claimsAtAccept: true) { nodes in
            let (a, b) = (nodes[0], nodes[1])
            // Before a dispatcher claims on the store, nothing is claimed at acceptance.
            let first = try await WorkQueueTests.tokenMessage(a, tokens: 1)
            #expect(try await Self.stored(a, first.id).state == "queued")
            #expect(try await Self.stored(a, first.id).owner == nil)
            #expect(
                try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: []).map(\.record.id) == [first.id]
            )

            let line = try await Self.line(a, appID: first.appID)
            #expect(line.state == .queued, "the accept answer says queued: nothing is sent yet")
            let row = try await Self.stored(a, line.id)
            #expect(row.state == "sending" && row.owner == a.nodeID && row.attempts == 1 && row.leaseUntil != nil)
            #expect(row.startedAt == SQLTime.milliseconds(line.createdAt) && row.total == 1)

            // Another node cannot take it; this node's next claim has it, equal to a read.
            #expect(try await b.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: []).isEmpty)
            let claims = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: [])
            #expect(claims.map(\.record.id) == [line.id])
            let claim = try #require(claims.first)
            #expect(claim.slice.id == 0 && claim.slice.after == 0 && claim.slice.through == nil)
            #expect(claim.slice.fence == 1 && claim.slice.leaseUntil != nil)
            let read = try #require(try await a.message(id: line.id))
            #expect(claim.record.state == read.state && claim.record.startedAt == read.startedAt)
            #expect(claim.record.total == read.total && claim.record.cursor == read.cursor)
            #expect(claim.record.content == read.content && claim.record.labels == read.labels)
            #expect(claim.record.audience == read.audience && claim.record.createdAt == read.createdAt)
            #expect(try await a.claimWork(now: Date(), limit: 10, sliceLimit: 4, running: []).isEmpty)
        }
    }

    /// A push scheduled for later, or to an audience cut in slices, goes the database's way.
    @Test func scheduledAndLargePushesAreNotClaimedAtAcceptance() async throws {
        try await WorkQueueTests.withNodes(1, claimsAtAccept: true) { nodes in
            let a = nodes[0]
            let appID = try await WorkQueueTests.tokenMessage(a, tokens: 1).appID
            _ = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            let later = try await Self.line(a, appID: appID, sendAt: Date().addingTimeInterval(3600))
            let everyone = try await Self.line(a, appID: appID, .all)
            let many = try await Self.line(a, appID: appID, .tokens((0..<11).map { String(format: "%064x", $0) }))
            #expect(try await Self.stored(a, later.id).state == "scheduled")
            for message in [everyone, many] {
                let row = try await Self.stored(a, message.id)
                #expect(row.state == "queued" && row.owner == nil, "\(message.audience)")
            }
        }
    }

    /// A waiting claim keeps its lease with the node's runs, and is dropped once another node
    /// took it over; when the dispatcher stops, the waiting ones go back at once, and later
    /// accepts are left queued.
    @Test func aWaitingClaimIsRenewedTakenOverOrGivenBack() async throws {
        try await WorkQueueTests.withNodes(2, claimsAtAccept: true) { nodes in
            let (a, b) = (nodes[0], nodes[1])
            let appID = try await WorkQueueTests.tokenMessage(a, tokens: 1).appID
            _ = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            let kept = try await Self.line(a, appID: appID)
            let lost = try await Self.line(a, appID: appID)

            // Renewed with the runs, though no run sends it yet.
            try await a.write {
                try $0.execute("UPDATE message_slices SET lease_until = 1 WHERE message_id = \(kept.id)")
            }
            let renewed = try await a.renewLeases([:], now: Date())
            #expect(renewed.held.contains(MessageSliceKey(messageID: kept.id, slice: 0)))
            #expect((try await Self.stored(a, kept.id).leaseUntil ?? 0) > 1)

            // Taken over after its lease ended: dropped here at the next renewal.
            try await a.write {
                try $0.execute("UPDATE message_slices SET lease_until = 0 WHERE message_id = \(lost.id)")
            }
            let takenOver = try await b.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            #expect(takenOver.map(\.record.id) == [lost.id] && takenOver.first?.slice.fence == 2)
            let afterTakeover = try await a.renewLeases([:], now: Date())
            #expect(!afterTakeover.held.contains(MessageSliceKey(messageID: lost.id, slice: 0)))
            #expect(a.acceptedClaims?.count == 1)

            // The dispatcher stops: the waiting claim goes back, and another node takes it.
            await a.dispatcherStopped()
            #expect(try await Self.stored(a, kept.id).owner == nil)
            let givenBack = try await b.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            #expect(givenBack.map(\.record.id) == [kept.id] && givenBack.first?.slice.fence == 2)
            let afterStop = try await Self.line(a, appID: appID)
            #expect(try await Self.stored(a, afterStop.id).state == "queued")
        }
    }

    /// Off (`Options.claimsAtAccept`), every message goes through the database's queue.
    @Test func offEveryMessageIsQueued() async throws {
        try await WorkQueueTests.withNodes(1, claimsAtAccept: false) { nodes in
            let a = nodes[0]
            let appID = try await WorkQueueTests.tokenMessage(a, tokens: 1).appID
            _ = try await a.claimWork(now: Date(), limit: 10, sliceLimit: 0, running: [])
            let line = try await Self.line(a, appID: appID)
            #expect(try await Self.stored(a, line.id).state == "queued")
            #expect(a.acceptedClaims == nil)
        }
    }
}

/// The waiting list's own rules, without a database.
@Suite struct AcceptedClaimsUnitTests {
    static func claim(_ id: Int64, app: Int64) -> WorkClaim {
        WorkClaim(
            record: MessageRecord.created(
                id: id,
                job: PushJob(
                    appID: app, vendor: "native", audience: .tokens(["t"]), content: PushContent(),
                    options: PushOptions()), state: .sending, createdAt: Date()),
            slice: WorkSlice(id: 0, after: 0, through: nil, fence: 1, leaseUntil: Date()))
    }

    @Test func nothingIsReservedBeforeOpeningOrPastTheLimit() {
        let claims = AcceptedClaims(limit: 2)
        #expect(!claims.reserve(), "no dispatcher claims yet")
        claims.open()
        #expect(claims.reserve() && claims.reserve())
        #expect(!claims.reserve(), "two reserved: full")
        claims.cancelReservation()
        #expect(claims.add(Self.claim(1, app: 1)), "the one reservation left is the claim added")
        #expect(claims.reserve())
        #expect(!claims.reserve(), "one reserved, one waiting: full")
        #expect(claims.take(limit: 5, running: [:]).map(\.record.id) == [1])
        #expect(claims.reserve())
    }

    @Test func takingIsFairAcrossAppsOldestFirstAmongEqualTurns() {
        let claims = AcceptedClaims()
        claims.open()
        for (id, app) in [(1, 7), (2, 7), (3, 7), (4, 8), (5, 8), (6, 9)] as [(Int64, Int64)] {
            _ = claims.reserve()
            _ = claims.add(Self.claim(id, app: app))
        }
        // Turns: app 7 has two running, so its lines have turns 3, 4, 5; app 8 1, 2; app 9 1.
        #expect(claims.take(limit: 3, running: [7: 2]).map(\.record.id) == [4, 5, 6])
        #expect(claims.take(limit: 2, running: [7: 2]).map(\.record.id) == [1, 2])
        #expect(claims.count == 1)
    }

    @Test func aClaimAddedAfterTheDispatcherStoppedIsRefusedAndRenewalsLeaveNewClaimsAlone() {
        let claims = AcceptedClaims()
        claims.open()
        _ = claims.reserve()
        _ = claims.add(Self.claim(1, app: 1))
        let asked = Set(claims.fences.keys)
        _ = claims.reserve()
        _ = claims.add(Self.claim(2, app: 1))
        let until = Date().addingTimeInterval(60)
        claims.renewed(asked: asked, held: [], until: until)
        #expect(claims.fences.keys.map(\.messageID) == [2], "1 was not held; 2 was not asked about")
        _ = claims.reserve()
        #expect(claims.close().map(\.record.id) == [2])
        #expect(!claims.add(Self.claim(3, app: 1)), "stopped: the caller gives it back")
        #expect(!claims.reserve())
    }
}
