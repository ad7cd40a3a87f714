import Foundation
import TuisongCore
import TuisongPlugin

/// A device as JPush's APIs know it: the core's device and its JPush ids.
struct JPushDevice: Sendable, Hashable {
    var deviceID: Int64
    var registrationID: String
    var alias: String?
    var mobile: String?
}

/// JPush's data on the shared database: `jpush_registrations` (a core device's
/// `registration_id`, alias and mobile number) and the lookups behind JPush's audiences over the
/// core's devices and tags. Everything is scoped to one app.
struct JPushStore: Sendable {
    let database: any SharedDatabase
    let store: any ProviderStore
    let clock: any TuisongCore.Clock

    /// The app whose JPush AppKey is `appKey` (unique across apps).
    func app(appKey: String) async throws -> App? {
        try await store.app(vendor: JPushKeys.vendor, setting: "app_key", value: appKey)
    }

    // MARK: Registrations

    func device(appID: Int64, registrationID: String) async throws -> JPushDevice? {
        try await database.read { db in
            try db.queryOne(
                """
                SELECT r.device_id, r.registration_id, r.alias, r.mobile FROM jpush_registrations r
                JOIN devices d ON d.id = r.device_id
                WHERE r.app_id = ? AND r.registration_id = ?
                """, [.integer(appID), .text(registrationID)]
            ).map(Self.device)
        }
    }

    func devices(appID: Int64, registrationIDs: [String]) async throws -> [JPushDevice] {
        guard !registrationIDs.isEmpty else { return [] }
        return try await database.read { db in
            var found: [JPushDevice] = []
            for chunk in SQLList.chunks(registrationIDs) {
                found += try db.query(
                    """
                    SELECT device_id, registration_id, alias, mobile FROM jpush_registrations
                    WHERE app_id = ? AND registration_id IN (\(chunk.marks))
                    """, [.integer(appID)] + chunk.values
                ).map(Self.device)
            }
            return found
        }
    }

    func device(appID: Int64, deviceID: Int64) async throws -> JPushDevice? {
        try await database.read { db in
            try db.queryOne(
                "SELECT device_id, registration_id, alias, mobile FROM jpush_registrations WHERE app_id = ? AND device_id = ?",
                [.integer(appID), .integer(deviceID)]
            ).map(Self.device)
        }
    }

    enum RegistrationOutcome: Sendable, Equatable {
        case registered(String)
        /// Another device of the app holds the registration id asked for.
        case taken
    }

    /// The device's registration id: the one it has, or `requested` (a device bringing the id
    /// it had under JPush), or a new one. A device asking for another id than its own is given
    /// it when no other device holds it.
    func register(appID: Int64, deviceID: Int64, requested: String?) async throws -> RegistrationOutcome {
        let now = Int64(clock.now.timeIntervalSince1970 * 1000)
        for _ in 0..<4 {
            let candidate = requested ?? Self.newRegistrationID()
            let outcome: RegistrationOutcome? = try await database.write { db in
                let own = try db.queryOne(
                    "SELECT registration_id FROM jpush_registrations WHERE device_id = ?", [.integer(deviceID)]
                )?["registration_id"].string
                if let own, requested == nil || own == requested { return .registered(own) }
                let holder = try db.queryOne(
                    "SELECT device_id FROM jpush_registrations WHERE app_id = ? AND registration_id = ?",
                    [.integer(appID), .text(candidate)])?["device_id"].int
                if holder != nil { return requested == nil ? nil : .taken }
                if own != nil {
                    try db.execute(
                        "UPDATE jpush_registrations SET registration_id = ? WHERE device_id = ?",
                        [.text(candidate), .integer(deviceID)])
                } else {
                    try db.execute(
                        """
                        INSERT INTO jpush_registrations (app_id, registration_id, device_id, created_at)
                        VALUES (?, ?, ?, ?)
                        """, [.integer(appID), .text(candidate), .integer(deviceID), .integer(now)])
                }
                return .registered(candidate)
            }
            if let outcome { return outcome }
        }
        throw JPushError.internalError("registration id")
    }

    /// JPush's ids are 19 characters of digits and lower-case letters, a "1" first; 72 random
    /// bits make a collision within one app unlikely, and `register` retries one.
    static func newRegistrationID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        return "1" + String((0..<18).map { _ in digits[Int(generator.next(upperBound: UInt8(16)))] })
    }

    /// Sets the alias (nil or "" removes it) and/or the mobile number of one device.
    func update(appID: Int64, deviceID: Int64, alias: String??, mobile: String??) async throws {
        try await database.write { db in
            if let alias {
                try db.execute(
                    "UPDATE jpush_registrations SET alias = ? WHERE app_id = ? AND device_id = ?",
                    [SQLValue(alias.flatMap { $0.isEmpty ? nil : $0 }), .integer(appID), .integer(deviceID)])
            }
            if let mobile {
                try db.execute(
                    "UPDATE jpush_registrations SET mobile = ? WHERE app_id = ? AND device_id = ?",
                    [SQLValue(mobile.flatMap { $0.isEmpty ? nil : $0 }), .integer(appID), .integer(deviceID)])
            }
        }
    }

    // MARK: Badges

    /// Applies a push's badge change to the badge kept for each device and answers each
    /// device's new badge; a device deleted since its page was read gets none. A device's row
    /// remembers the message that last changed it, so a page decided again (after a crash or a
    /// failed write) gets the badge it was given, not a second step. (Had another message for
    /// the device been decided in between, that page counts again: a badge one too high after a
    /// crash, which the app's next report corrects.)
    func applyBadge(_ badge: JPushBadge, messageID: Int64, deviceIDs: [Int64]) async throws -> [Int64: Int] {
        guard !deviceIDs.isEmpty else { return [:] }
        // Both values are integers this process computed, not text from a request.
        let initial = badge.applied(to: 0)
        let next: String
        switch badge {
        case .set: next = "excluded.badge"
        case .add(let step):
            let sum = "jpush_badges.badge + (\(step))"
            next =
                "CASE WHEN \(sum) < 0 THEN 0 WHEN \(sum) > \(JPushBadge.largest) THEN \(JPushBadge.largest) ELSE \(sum) END"
        }
        let ids = deviceIDs.map(SQLValue.integer)
        return try await database.write { db in
            var badges: [Int64: Int] = [:]
            for chunk in SQLList.chunks(ids) {
                let rows = try db.query(
                    """
                    INSERT INTO jpush_badges (device_id, badge, message_id)
                    SELECT id, \(initial), \(messageID) FROM devices WHERE id IN (\(chunk.marks))
                    ON CONFLICT (device_id) DO UPDATE SET
                        badge = CASE WHEN jpush_badges.message_id = excluded.message_id
                            THEN jpush_badges.badge ELSE \(next) END,
                        message_id = excluded.message_id
                    RETURNING device_id, badge
                    """, chunk.values)
                for row in rows {
                    if let id = row["device_id"].int, let value = row["badge"].int { badges[id] = Int(value) }
                }
            }
            return badges
        }
    }

    /// What the app reports its badge to be (JPush's `setBadge`; 0 is `resetBadge`).
    func setBadge(deviceID: Int64, to value: Int) async throws {
        try await database.write { db in
            try db.execute(
                """
                INSERT INTO jpush_badges (device_id, badge, message_id) VALUES (?, ?, NULL)
                ON CONFLICT (device_id) DO UPDATE SET badge = excluded.badge, message_id = NULL
                """, [.integer(deviceID), .integer(Int64(value))])
        }
    }

    func badge(deviceID: Int64) async throws -> Int? {
        try await database.read { db in
            try db.queryOne("SELECT badge FROM jpush_badges WHERE device_id = ?", [.integer(deviceID)])?["badge"].int
                .map(Int.init)
        }
    }

    // MARK: Aliases

    func devices(appID: Int64, alias: String) async throws -> [JPushDevice] {
        try await database.read { db in
            try db.query(
                """
                SELECT device_id, registration_id, alias, mobile FROM jpush_registrations
                WHERE app_id = ? AND alias = ? ORDER BY device_id
                """, [.integer(appID), .text(alias)]
            ).map(Self.device)
        }
    }

    /// Unbinds the alias from every device; the number of devices it left.
    func deleteAlias(appID: Int64, alias: String) async throws -> Int {
        try await database.write { db in
            try db.execute(
                "UPDATE jpush_registrations SET alias = NULL WHERE app_id = ? AND alias = ?",
                [.integer(appID), .text(alias)])
            return db.changedRows
        }
    }

    // MARK: Tags (the core's tables)

    /// The app's tags that at least one device carries, by name.
    func tagNames(appID: Int64) async throws -> [String] {
        try await database.read { db in
            try db.query(
                """
                SELECT t.name FROM tags t WHERE t.app_id = ?
                AND EXISTS (SELECT 1 FROM device_tags dt WHERE dt.tag_id = t.id) ORDER BY t.name
                """, [.integer(appID)]
            ).compactMap { $0["name"].string }
        }
    }

    func tagNames(appID: Int64, deviceID: Int64) async throws -> [String] {
        try await database.read { db in
            try db.query(
                """
                SELECT t.name FROM device_tags dt JOIN tags t ON t.id = dt.tag_id
                WHERE t.app_id = ? AND dt.device_id = ? ORDER BY t.name
                """, [.integer(appID), .integer(deviceID)]
            ).compactMap { $0["name"].string }
        }
    }

    func deviceHasTag(appID: Int64, deviceID: Int64, tag: String) async throws -> Bool {
        try await database.read { db in
            try db.queryOne(
                """
                SELECT 1 AS found FROM device_tags dt JOIN tags t ON t.id = dt.tag_id
                WHERE t.app_id = ? AND t.name = ? AND dt.device_id = ?
                """, [.integer(appID), .text(tag), .integer(deviceID)]) != nil
        }
    }

    /// Removes the tag from every device of the app; whether it existed.
    func deleteTag(appID: Int64, tag: String) async throws -> Bool {
        try await database.write { db in
            guard
                let tagID = try db.queryOne(
                    "SELECT id FROM tags WHERE app_id = ? AND name = ?", [.integer(appID), .text(tag)])?["id"].int
            else { return false }
            try db.execute("DELETE FROM device_tags WHERE tag_id = ?", [.integer(tagID)])
            try db.execute("DELETE FROM tags WHERE id = ?", [.integer(tagID)])
            return true
        }
    }

    // MARK: Audiences

    /// The tags each of these devices carries (a device without tags is left out).
    func tags(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: Set<String>] {
        guard !deviceIDs.isEmpty else { return [:] }
        return try await database.read { db in
            var tags: [Int64: Set<String>] = [:]
            for chunk in SQLList.chunks(deviceIDs.map(SQLValue.integer)) {
                for row in try db.query(
                    """
                    SELECT dt.device_id, t.name FROM device_tags dt JOIN tags t ON t.id = dt.tag_id
                    WHERE t.app_id = ? AND dt.device_id IN (\(chunk.marks))
                    """, [.integer(appID)] + chunk.values)
                {
                    if let id = row["device_id"].int, let name = row["name"].string {
                        tags[id, default: []].insert(name)
                    }
                }
            }
            return tags
        }
    }

    /// The valid devices of the app bound to any of `aliases`.
    func deviceIDs(appID: Int64, aliases: [String]) async throws -> Set<Int64> {
        guard !aliases.isEmpty else { return [] }
        return try await database.read { db in
            var ids = Set<Int64>()
            for chunk in SQLList.chunks(aliases) {
                for row in try db.query(
                    """
                    SELECT r.device_id FROM jpush_registrations r JOIN devices d ON d.id = r.device_id
                    WHERE r.app_id = ? AND d.invalidated_at IS NULL AND r.alias IN (\(chunk.marks))
                    """, [.integer(appID)] + chunk.values)
                {
                    if let id = row["device_id"].int { ids.insert(id) }
                }
            }
            return ids
        }
    }

    private static func device(_ row: SQLRow) -> JPushDevice {
        JPushDevice(
            deviceID: row["device_id"].int ?? 0, registrationID: row["registration_id"].string ?? "",
            alias: row["alias"].string, mobile: row["mobile"].string)
    }
}
