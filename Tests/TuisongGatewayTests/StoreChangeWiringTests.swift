import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongGatewayTestKit
import TuisongPluginTestKit

@testable import TuisongGateway

/// The gateway's side of the store's change feed, on SQLite (where a change published to the
/// store reaches this process's subscribers, as a NOTIFY from another node reaches them on
/// PostgreSQL).
@Suite(.serialized) struct StoreChangeWiringTests {
    func pushAll(_ gw: RunningGateway, _ key: String) async throws {
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"]])
        #expect(push.status == 202)
        let id = try #require(push.jsonObject["message_id"] as? Int)
        #expect(try await gw.completed(messageID: Int64(id)).counts.delivered == 1)
    }

    /// Another node changed the app's bundle id (here: straight in the store, then the change
    /// published as that node would): the next push here uses it, not the cached one.
    @Test func anAppChangedElsewhereIsDroppedFromTheCaches() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.old")
        _ = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key, json: ["environment": "production"])
        let mock = try #require(gw.runtime.localMock)
        try await pushAll(gw, key)
        #expect(mock.receivedNotifications().map(\.topic) == ["com.example.old"])

        var app = try #require(try await gw.runtime.store.app(id: appID))
        app.bundleID = "com.example.new"
        try await gw.runtime.store.updateApp(app)
        await gw.runtime.store.publish(.app(appID))
        mock.resetRecorded()
        try await pushAll(gw, key)
        #expect(mock.receivedNotifications().map(\.topic) == ["com.example.new"], "not the cached old bundle id")
    }

    /// A push accepted by the native API wakes the other nodes.
    @Test func aQueuedPushPublishesAWakeUp() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        _ = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key, json: ["environment": "production"])
        let wakes = Atomic<Int>(0)
        gw.runtime.store.subscribe { change in
            if change == .wake { wakes.add(1, ordering: .relaxed) }
        }
        try await pushAll(gw, key)
        #expect(wakes.load(ordering: .relaxed) == 1)

        // A scheduled one wakes nobody: it is not due yet.
        let later = Int(Date().timeIntervalSince1970) + 3600
        let scheduled = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "x"], "send_at": later])
        #expect(scheduled.status == 202)
        #expect(wakes.load(ordering: .relaxed) == 1)
    }
}
