import Foundation
import TuisongCore
import TuisongHTTP

/// One schedule of JPush's schedule API (`/v3/schedules`): a push object sent at the trigger's
/// times (`JPushTrigger`). Each push of an enabled schedule is one scheduled Tuisong message
/// (`send_at`), so it survives restarts and is cancelled like any scheduled message.
struct JPushSchedule: Sendable {
    var id: String
    var name: String
    var enabled: Bool
    var trigger: JSONValue
    var push: JSONValue
    /// The scheduled messages, in time order.
    var messageIDs: [Int64] = []

    var json: JSONValue {
        [
            "schedule_id": .string(id), "name": .string(name), "enabled": .bool(enabled), "trigger": trigger,
            "push": push,
        ]
    }
}

extension JPushStore {
    func schedule(appID: Int64, id: String) async throws -> JPushSchedule? {
        try await database.read { db in
            try db.queryOne(
                """
                SELECT schedule_id, name, enabled, trigger_json, push_json FROM jpush_schedules
                WHERE app_id = ? AND schedule_id = ?
                """, [.integer(appID), .text(id)]
            ).flatMap { try Self.schedule($0, db: db, appID: appID) }
        }
    }

    func schedules(appID: Int64, offset: Int, limit: Int) async throws -> (total: Int, page: [JPushSchedule]) {
        try await database.read { db in
            let total =
                try db.queryOne("SELECT COUNT(*) AS n FROM jpush_schedules WHERE app_id = ?", [.integer(appID)])?["n"]
                .int ?? 0
            let rows = try db.query(
                """
                SELECT schedule_id, name, enabled, trigger_json, push_json FROM jpush_schedules
                WHERE app_id = ? ORDER BY created_at, schedule_id LIMIT ? OFFSET ?
                """, [.integer(appID), .integer(Int64(limit)), .integer(Int64(offset))])
            return (Int(total), try rows.compactMap { try Self.schedule($0, db: db, appID: appID) })
        }
    }

    func save(appID: Int64, _ schedule: JPushSchedule, now: Int64) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM jpush_schedules WHERE app_id = ? AND schedule_id = ?",
                [.integer(appID), .text(schedule.id)])
            try db.execute(
                """
                INSERT INTO jpush_schedules (app_id, schedule_id, name, enabled, trigger_json, push_json, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(appID), .text(schedule.id), .text(schedule.name), .integer(schedule.enabled ? 1 : 0),
                    .text(schedule.trigger.serializedString), .text(schedule.push.serializedString), .integer(now),
                ])
            for id in schedule.messageIDs {
                try db.execute(
                    "INSERT INTO jpush_schedule_messages (app_id, schedule_id, message_id) VALUES (?, ?, ?)",
                    [.integer(appID), .text(schedule.id), .integer(id)])
            }
        }
    }

    func deleteSchedule(appID: Int64, id: String) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM jpush_schedule_messages WHERE app_id = ? AND schedule_id = ?",
                [.integer(appID), .text(id)])
            try db.execute(
                "DELETE FROM jpush_schedules WHERE app_id = ? AND schedule_id = ?", [.integer(appID), .text(id)])
        }
    }

    private static func schedule(_ row: SQLRow, db: any SQLExecutor, appID: Int64) throws -> JPushSchedule? {
        guard let id = row["schedule_id"].string, let name = row["name"].string,
            let trigger = row["trigger_json"].string.flatMap({ try? JSONValue(parsing: $0) }),
            let push = row["push_json"].string.flatMap({ try? JSONValue(parsing: $0) })
        else { return nil }
        let messages = try db.query(
            "SELECT message_id FROM jpush_schedule_messages WHERE app_id = ? AND schedule_id = ? ORDER BY message_id",
            [.integer(appID), .text(id)])
        return JPushSchedule(
            id: id, name: name, enabled: row["enabled"].int == 1, trigger: trigger, push: push,
            messageIDs: messages.compactMap { $0["message_id"].int })
    }
}

extension JPushProvider {
    /// `POST /v3/schedules` `{"name", "enabled", "trigger": {"single": {"time"}} or
    /// {"periodical": {…}}, "push"}`: `{"schedule_id", "name"}`.
    func createSchedule(_ call: Call) async throws -> Response {
        let body = try Self.object(call)
        guard let name = body["name"]?.stringValue, !name.isEmpty, name.utf8.count <= 255 else {
            throw JPushError.scheduleInvalid("name must be 1–255 bytes")
        }
        guard case .bool(let enabled)? = body["enabled"] else {
            throw JPushError.scheduleInvalid("enabled must be true or false")
        }
        guard let push = body["push"] else { throw JPushError.missing("push") }
        var schedule = JPushSchedule(
            id: UUID().uuidString.lowercased(), name: name, enabled: enabled, trigger: body["trigger"] ?? .null,
            push: push)
        schedule.messageIDs = try await submitSchedule(schedule, app: call.app)
        try await jpushStore.save(appID: call.app.id, schedule, now: Int64(now.timeIntervalSince1970 * 1000))
        return JPushReply.ok(["schedule_id": .string(schedule.id), "name": .string(name)])
    }

    /// The trigger and push checked, and an enabled schedule's messages submitted, one for each
    /// of its times. Should one be refused, those submitted before it are cancelled.
    func submitSchedule(_ schedule: JPushSchedule, app: App) async throws -> [Int64] {
        let times = try JPushTrigger(schedule.trigger).occurrences(after: now)
        let pushes = try times.map { time throws(JPushError) in (time, try JPushPayload.parse(schedule.push, now: time))
        }
        guard schedule.enabled else { return [] }
        var ids: [Int64] = []
        do {
            for (time, push) in pushes {
                if let id = Int64(try await submit(push, app: app, validateOnly: false, sendAt: time)) {
                    ids.append(id)
                }
            }
        } catch {
            for id in ids { _ = try? await gateway.cancel(messageID: id) }
            throw error
        }
        return ids
    }

    func schedule(_ call: Call) async throws -> JPushSchedule {
        guard let schedule = try await jpushStore.schedule(appID: call.app.id, id: call.pathParameter("schedule_id"))
        else { throw JPushError.scheduleNotFound }
        return schedule
    }

    /// `GET /v3/schedules?page=N`: 50 a page.
    func listSchedules(_ call: Call) async throws -> Response {
        let page = Int(call.request.query["page"] ?? "1") ?? 1
        guard page >= 1 else { throw JPushError.scheduleInvalid("page must be 1 or more") }
        let (total, schedules) = try await jpushStore.schedules(appID: call.app.id, offset: (page - 1) * 50, limit: 50)
        return JPushReply.ok([
            "total_count": .int(Int64(total)), "total_pages": .int(Int64((total + 49) / 50)), "page": .int(Int64(page)),
            "schedules": .array(schedules.map(\.json)),
        ])
    }

    func getSchedule(_ call: Call) async throws -> Response { JPushReply.ok(try await schedule(call).json) }

    /// `GET /v3/schedules/{id}/msg_ids`: the messages the schedule made, in time order.
    func scheduleMessageIDs(_ call: Call) async throws -> Response {
        let schedule = try await schedule(call)
        let ids = schedule.messageIDs.map { JSONValue.string(String($0)) }
        return JPushReply.ok(["count": .int(Int64(ids.count)), "msgids": .array(ids)])
    }

    /// `PUT /v3/schedules/{id}`: any of `name`, `enabled`, `trigger`, `push`; the scheduled
    /// messages not yet sent are replaced (a single schedule's is refused once it has been sent;
    /// a periodical schedule's pushes already sent stay in its `msg_ids`).
    func updateSchedule(_ call: Call) async throws -> Response {
        var schedule = try await schedule(call)
        let body = try Self.object(call)
        if let name = body["name"] {
            guard let text = name.stringValue, !text.isEmpty, text.utf8.count <= 255 else {
                throw JPushError.scheduleInvalid("name must be 1–255 bytes")
            }
            schedule.name = text
        }
        if let enabled = body["enabled"] {
            guard case .bool(let flag) = enabled else {
                throw JPushError.scheduleInvalid("enabled must be true or false")
            }
            schedule.enabled = flag
        }
        if let trigger = body["trigger"] { schedule.trigger = trigger }
        if let push = body["push"] { schedule.push = push }
        let sent = try await cancelMessages(of: schedule)
        schedule.messageIDs = sent + (try await submitSchedule(schedule, app: call.app))
        try await jpushStore.save(appID: call.app.id, schedule, now: Int64(now.timeIntervalSince1970 * 1000))
        return JPushReply.ok(schedule.json)
    }

    /// `DELETE /v3/schedules/{id}`: the schedule and its messages not yet sent (a single
    /// schedule's is refused once it has been sent).
    func deleteSchedule(_ call: Call) async throws -> Response {
        let schedule = try await schedule(call)
        _ = try await cancelMessages(of: schedule)
        try await jpushStore.deleteSchedule(appID: call.app.id, id: schedule.id)
        return JPushReply.empty
    }

    /// Cancels the schedule's messages not yet sent; the ids of those already sent. A single
    /// schedule whose push was sent can no longer change (8102).
    private func cancelMessages(of schedule: JPushSchedule) async throws -> [Int64] {
        var sent: [Int64] = []
        for id in schedule.messageIDs where !(try await gateway.cancel(messageID: id)) { sent.append(id) }
        if !sent.isEmpty, case .single? = try? JPushTrigger(schedule.trigger) {
            throw JPushError(400, 8102, "the schedule's push has been sent; it can no longer change")
        }
        return sent
    }
}
