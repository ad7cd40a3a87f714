import Foundation
import TuisongCore
import TuisongHTTP

/// One schedule of JPush's schedule API (`/v3/schedules`): a push object sent once at the
/// trigger's time. Each enabled schedule is one scheduled Tuisong message (`send_at`), so it
/// survives restarts and is cancelled like any scheduled message.
struct JPushSchedule: Sendable {
    var id: String
    var name: String
    var enabled: Bool
    var trigger: JSONValue
    var push: JSONValue
    var messageID: Int64?

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
                SELECT schedule_id, name, enabled, trigger_json, push_json, message_id FROM jpush_schedules
                WHERE app_id = ? AND schedule_id = ?
                """, [.integer(appID), .text(id)]
            ).flatMap(Self.schedule)
        }
    }

    func schedules(appID: Int64, offset: Int, limit: Int) async throws -> (total: Int, page: [JPushSchedule]) {
        try await database.read { db in
            let total =
                try db.queryOne("SELECT COUNT(*) AS n FROM jpush_schedules WHERE app_id = ?", [.integer(appID)])?["n"]
                .int ?? 0
            let rows = try db.query(
                """
                SELECT schedule_id, name, enabled, trigger_json, push_json, message_id FROM jpush_schedules
                WHERE app_id = ? ORDER BY created_at, schedule_id LIMIT ? OFFSET ?
                """, [.integer(appID), .integer(Int64(limit)), .integer(Int64(offset))])
            return (Int(total), rows.compactMap(Self.schedule))
        }
    }

    func save(appID: Int64, _ schedule: JPushSchedule, now: Int64) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM jpush_schedules WHERE app_id = ? AND schedule_id = ?",
                [.integer(appID), .text(schedule.id)])
            try db.execute(
                """
                INSERT INTO jpush_schedules
                    (app_id, schedule_id, name, enabled, trigger_json, push_json, message_id, created_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .integer(appID), .text(schedule.id), .text(schedule.name), .integer(schedule.enabled ? 1 : 0),
                    .text(schedule.trigger.serializedString), .text(schedule.push.serializedString),
                    SQLValue(schedule.messageID), .integer(now),
                ])
        }
    }

    func deleteSchedule(appID: Int64, id: String) async throws {
        try await database.write { db in
            try db.execute(
                "DELETE FROM jpush_schedules WHERE app_id = ? AND schedule_id = ?", [.integer(appID), .text(id)])
        }
    }

    private static func schedule(_ row: SQLRow) -> JPushSchedule? {
        guard let id = row["schedule_id"].string, let name = row["name"].string,
            let trigger = row["trigger_json"].string.flatMap({ try? JSONValue(parsing: $0) }),
            let push = row["push_json"].string.flatMap({ try? JSONValue(parsing: $0) })
        else { return nil }
        return JPushSchedule(
            id: id, name: name, enabled: row["enabled"].int == 1, trigger: trigger, push: push,
            messageID: row["message_id"].int)
    }
}

extension JPushProvider {
    /// JPush writes trigger times in Beijing time, `yyyy-MM-dd HH:mm:ss`.
    static func triggerTime(_ trigger: JSONValue?) throws(JPushError) -> Date {
        guard case .object(let fields)? = trigger else { throw .scheduleInvalid("trigger must be an object") }
        if fields["periodical"] != nil { throw .notOffered("trigger.periodical (a recurring schedule)") }
        guard case .object(let single)? = fields["single"], let text = single["time"]?.stringValue else {
            throw .scheduleInvalid("trigger.single.time is required (yyyy-MM-dd HH:mm:ss)")
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Asia/Shanghai")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        guard let date = formatter.date(from: text) else {
            throw .scheduleInvalid("trigger.single.time must be yyyy-MM-dd HH:mm:ss (Beijing time)")
        }
        return date
    }

    /// `POST /v3/schedules` `{"name", "enabled", "trigger": {"single": {"time"}}, "push"}`:
    /// `{"schedule_id", "name"}`.
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
        schedule.messageID = try await submitSchedule(schedule, app: call.app)
        try await jpushStore.save(appID: call.app.id, schedule, now: Int64(now.timeIntervalSince1970 * 1000))
        return JPushReply.ok(["schedule_id": .string(schedule.id), "name": .string(name)])
    }

    /// The trigger and push checked, and an enabled schedule's message submitted for its time.
    func submitSchedule(_ schedule: JPushSchedule, app: App) async throws -> Int64? {
        let time = try Self.triggerTime(schedule.trigger)
        guard time > now else { throw JPushError.scheduleInvalid("trigger.single.time is in the past") }
        let push = try JPushPayload.parse(schedule.push, now: time)
        guard schedule.enabled else { return nil }
        guard let id = Int64(try await submit(push, app: app, validateOnly: false, sendAt: time)) else { return nil }
        return id
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

    /// `GET /v3/schedules/{id}/msg_ids`: the message the schedule made, once made.
    func scheduleMessageIDs(_ call: Call) async throws -> Response {
        let schedule = try await schedule(call)
        let ids = schedule.messageID.map { [JSONValue.string(String($0))] } ?? []
        return JPushReply.ok(["count": .int(Int64(ids.count)), "msgids": .array(ids)])
    }

    /// `PUT /v3/schedules/{id}`: any of `name`, `enabled`, `trigger`, `push`; the scheduled
    /// message is replaced (refused once it has been sent).
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
        try await cancelMessage(of: schedule)
        schedule.messageID = try await submitSchedule(schedule, app: call.app)
        try await jpushStore.save(appID: call.app.id, schedule, now: Int64(now.timeIntervalSince1970 * 1000))
        return JPushReply.ok(schedule.json)
    }

    /// `DELETE /v3/schedules/{id}`: the schedule and its message, unless it has been sent.
    func deleteSchedule(_ call: Call) async throws -> Response {
        let schedule = try await schedule(call)
        try await cancelMessage(of: schedule)
        try await jpushStore.deleteSchedule(appID: call.app.id, id: schedule.id)
        return JPushReply.empty
    }

    private func cancelMessage(of schedule: JPushSchedule) async throws {
        guard let id = schedule.messageID else { return }
        guard try await gateway.cancel(messageID: id) else {
            throw JPushError(400, 8102, "the schedule's push has been sent; it can no longer change")
        }
    }
}
