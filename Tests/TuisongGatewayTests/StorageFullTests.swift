import Foundation
import GRDB
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway
@testable import TuisongSQLiteStore

/// Issue #40 item 3: a full disk is said as such — `insufficient_storage` with `Retry-After`,
/// `/healthz` and a gauge unhealthy while it lasts — not "the database is busy"; and every
/// push answered 202 before it is delivered once space is freed.
@Suite(.serialized) struct StorageFullTests {
    /// SQLite's page limit for the writer connection: at the file's size, a write that needs
    /// a new page fails with SQLITE_FULL ("database or disk is full"), as a full disk does.
    func limitPages(_ store: SQLiteStore, to limit: Int?) async throws {
        try await store.write { db in
            let pages = try Int.fetchOne(db, sql: "PRAGMA page_count") ?? 1
            try db.execute(sql: "PRAGMA max_page_count = \(limit ?? pages)")
        }
    }

    @Test func aFullDiskIsSaidAsSuchAndWhatWasAcknowledgedIsDelivered() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let store = try #require(gw.runtime.store as? SQLiteStore)
        let (_, key) = try await gw.createApp()
        let push: [String: Any] = [
            "audience": ["tokens": [token(1)]], "notification": ["alert": "hi"], "environment": "production",
        ]
        #expect(try await http("GET", "\(gw.baseURL)/healthz").status == 200)

        try await limitPages(store, to: nil)
        var acknowledged: [Int] = []
        var refused: TestResponse?
        for _ in 0..<2000 {
            let answer = try await http("POST", "\(gw.baseURL)/api/v1/push", key: key, json: push)
            if answer.status == 202, let id = answer.jsonObject["message_id"] as? Int {
                acknowledged.append(id)
            } else {
                refused = answer
                break
            }
        }
        let full = try #require(refused, "the page limit never filled")
        #expect(full.status == 503)
        #expect(full.errorCode == "insufficient_storage")
        #expect(full.headers["retry-after"] == "30")
        #expect(full.errorMessage?.contains("disk is full") == true)

        let health = try await http("GET", "\(gw.baseURL)/healthz")
        #expect(health.status == 503)
        #expect(health.jsonObject["database"] as? String == "insufficient_storage")
        #expect(health.headers["retry-after"] == "30")
        let metrics = try await http("GET", "\(gw.baseURL)/metrics")
        #expect(metrics.text.contains(#"tuisong_database_unavailable{reason="insufficient_storage"} 1"#))

        // Space freed: the next write clears it, and every acknowledged push goes out.
        try await limitPages(store, to: 1_073_741_823)
        let after = try await http("POST", "\(gw.baseURL)/api/v1/push", key: key, json: push)
        #expect(after.status == 202)
        acknowledged.append(try #require(after.jsonObject["message_id"] as? Int))
        // Cleared by the first write that succeeds once writes have stopped failing for the
        // quiet period (5 s): the engine's own writes do it.
        #expect(
            try await eventually(within: 30, every: .milliseconds(200)) {
                try await http("GET", "\(gw.baseURL)/healthz").status == 200
            })
        let cleared = try await http("GET", "\(gw.baseURL)/metrics")
        #expect(cleared.text.contains(#"tuisong_database_unavailable{reason="insufficient_storage"} 0"#))
        for id in acknowledged {
            let status = try await gw.completed(messageID: Int64(id))
            #expect(status.counts.delivered == 1, "message \(id)")
        }
    }

    /// Device registrations are group-committed on their own path (`RegistrationBatcher`): a
    /// full disk met there is told to `/healthz` too, and the first registration once space is
    /// freed (after the quiet period) clears it.
    @Test func aFullDiskMetByRegistrationsIsToldToHealthz() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let store = try #require(gw.runtime.store as? SQLiteStore)
        let (_, key) = try await gw.createApp()
        #expect(try await http("GET", "\(gw.baseURL)/healthz").status == 200)

        try await limitPages(store, to: nil)
        var refused: TestResponse?
        for n in 1...5000 {
            let answer = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token(n))", key: key, json: ["environment": "production"])
            if answer.status >= 300 {
                refused = answer
                break
            }
        }
        let full = try #require(refused, "the page limit never filled")
        #expect(full.status == 503)
        #expect(full.errorCode == "insufficient_storage")
        let health = try await http("GET", "\(gw.baseURL)/healthz")
        #expect(health.status == 503)
        #expect(health.jsonObject["database"] as? String == "insufficient_storage")

        try await limitPages(store, to: 1_073_741_823)
        #expect(
            try await eventually(within: 30, every: .milliseconds(200)) {
                let again = try await http(
                    "PUT", "\(gw.baseURL)/api/v1/devices/\(token(9999))", key: key,
                    json: ["environment": "production"])
                guard again.status < 300 else { return false }
                return try await http("GET", "\(gw.baseURL)/healthz").status == 200
            })
    }

    @Test func theKindsAreTold() {
        let full = ErrorMapping.storeError(DatabaseError(resultCode: .SQLITE_FULL, message: "database or disk is full"))
        #expect((full as? StoreError)?.unavailability == .storageFull)
        let busy = ErrorMapping.storeError(DatabaseError(resultCode: .SQLITE_BUSY, message: "database is locked"))
        #expect((busy as? StoreError)?.unavailability == .busy)
        let io = ErrorMapping.storeError(DatabaseError(resultCode: .SQLITE_IOERR, message: "disk I/O error"))
        #expect((io as? StoreError)?.unavailability == .databaseDown)
        #expect(StoreError(.conflict, "x").unavailability == nil)
        let health = StoreHealth(quietPeriod: 0)
        health.noteFailure(busy)
        #expect(health.trouble == nil, "busy is not a health problem")
        health.noteFailure(full)
        #expect(health.trouble?.kind == .storageFull)
        health.noteSuccess()
        #expect(health.trouble == nil)
        // Within the quiet period a success (an update that fit its page) does not clear it.
        let patient = StoreHealth(quietPeriod: 3600)
        patient.noteFailure(full)
        patient.noteSuccess()
        #expect(patient.trouble?.kind == .storageFull)
    }
}
