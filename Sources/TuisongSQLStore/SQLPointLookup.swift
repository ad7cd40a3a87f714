import Foundation
import TuisongCore

/// The reads of one row by key on every API request's path (an app by its API key hash, a
/// device by token), written once and run on each backend's fastest path
/// (`SQLStoreBackend.sqlPointLookUp`): SQLite's point readers on the calling thread, PostgreSQL a
/// pooled read; each statement prepared once per connection on both.
public enum SQLPointLookup: Int, CaseIterable, Sendable {
    /// A device by (app, token), its tag names joined by U+001F in the last column.
    case deviceWithTagsByToken
    case deviceByToken
    case deviceByID
    case appByID
    case appByAPIKeyHash
    /// The first app by id whose vendor settings hold parameter 2 at the path parameter 1
    /// (`SQLDialect.jsonPathValue`).
    case appByVendorSetting

    /// A message's changing columns: state, total, start, completion, cursor, the six counts,
    /// its failure and skip counts as JSON objects (`{"reason":count}`) and, where slices share
    /// the work (`SQLDialect.sharesWorkInSlices`), each slice's cursor as a JSON object. The
    /// status poll: 100 times a second must not cost a push its throughput.
    case messageProgressByID

    /// The statement in `dialect`'s words; its parameters are the lookup's arguments in order.
    public func statement(for dialect: any SQLDialect) -> SQLStatement {
        switch self {
        case .deviceWithTagsByToken:
            """
            SELECT \(raw: Rows.deviceColumns),
                (SELECT \(raw: dialect.joinedText("t.name", separator: 31))
                 FROM device_tags dt JOIN tags t ON t.id = dt.tag_id WHERE dt.device_id = devices.id)
            FROM devices WHERE app_id = \(parameter: 1) AND token = \(parameter: 2)
            """
        case .deviceByToken:
            "SELECT \(raw: Rows.deviceColumns) FROM devices WHERE app_id = \(parameter: 1) AND token = \(parameter: 2)"
        case .deviceByID:
            "SELECT \(raw: Rows.deviceColumns) FROM devices WHERE id = \(parameter: 1)"
        case .appByID:
            "SELECT \(raw: Rows.appColumns) FROM apps WHERE id = \(parameter: 1)"
        case .appByAPIKeyHash:
            "SELECT \(raw: Rows.appColumns) FROM apps WHERE api_key_hash = \(parameter: 1)"
        case .messageProgressByID:
            messageProgress(dialect)
        case .appByVendorSetting:
            """
            SELECT \(raw: Rows.appColumns) FROM apps
            WHERE \(raw: dialect.jsonTextAtBoundPath("vendor_settings").before)\(parameter: 1)\
            \(raw: dialect.jsonTextAtBoundPath("vendor_settings").after) = \(parameter: 2)
            ORDER BY id LIMIT 1
            """
        }
    }
}

extension SQLPointLookup {
    private func messageProgress(_ dialect: any SQLDialect) -> SQLStatement {
        let counts = dialect.messageCounts(table: "m")
        func reasons(_ table: String) -> String {
            """
            (SELECT \(dialect.jsonObjectAggregate(key: "reason", value: "n")) FROM
                (SELECT reason, sum(count) AS n FROM \(table) WHERE message_id = m.id GROUP BY reason) r)
            """
        }
        // With slices, the message's cursor is its first slice's (the only one written outside
        // the queue), and each slice has its own.
        let slices = dialect.sharesWorkInSlices
        let cursor =
            slices
            ? "coalesce((SELECT cursor FROM message_slices WHERE message_id = m.id AND slice = 0), 0)" : "m.cursor"
        let sliceCursors =
            slices
            ? ", (SELECT \(dialect.jsonObjectAggregate(key: "slice", value: "cursor")) FROM message_slices "
                + "WHERE message_id = m.id)" : ""
        return """
            SELECT m.state, m.total, m.started_at, m.completed_at, \(raw: cursor), \(raw: counts.columns),
                \(raw: reasons("message_failures")), \(raw: reasons("message_skips"))\(raw: sliceCursors)
            FROM messages m \(raw: counts.join) WHERE m.id = \(parameter: 1)
            """
    }
}

// The lookups of `AppStore` and `DeviceStore` on the native API's hot path, written once over
// `sqlPointLookUp`.
extension SQLStoreBackend {
    public func app(id: Int64) async throws -> App? {
        try await sqlPointLookUp(.appByID, [.integer(id)]) { row in try Rows.app(columns: row) }
    }

    /// The app whose native API key hashes to `apiKeyHash`; on the path of every native
    /// API request whose key is not cached.
    public func app(apiKeyHash: String) async throws -> App? {
        try await sqlPointLookUp(.appByAPIKeyHash, [.text(apiKeyHash)]) { row in try Rows.app(columns: row) }
    }

    public func device(appID: Int64, token: DeviceToken) async throws -> Device? {
        try await sqlPointLookUp(.deviceByToken, [.integer(appID), .text(token.value)]) { row in
            try Rows.device(columns: row)
        }
    }

    public func device(id: Int64) async throws -> Device? {
        try await sqlPointLookUp(.deviceByID, [.integer(id)]) { row in try Rows.device(columns: row) }
    }

    /// One statement: the tags ride along as a unit-separator-joined column.
    public func deviceWithTags(appID: Int64, token: DeviceToken) async throws -> (device: Device, tags: [String])? {
        try await sqlPointLookUp(.deviceWithTagsByToken, [.integer(appID), .text(token.value)]) { row in
            let tags =
                row.optionalString(Int32(Rows.deviceColumnCount)).map {
                    $0.split(separator: "\u{1F}").map(String.init).sorted()
                } ?? []
            return (try Rows.device(columns: row), tags)
        }
    }
}

extension SQLStoreBackend where Self: GatewayStore {
    /// The app whose `vendorSettings[vendor][setting]` is `value`: how a provider finds the app
    /// a request names by a setting declared unique across apps (a vendor's API key or app id).
    /// It reads every app's settings (apps are few), so it is meant for unique settings, the
    /// first app by id answering otherwise.
    public func app(vendor: String, setting: String, value: String) async throws -> App? {
        // SQLite's JSON path cannot spell a name holding `"`; neither database answers one.
        guard !vendor.contains("\""), !setting.contains("\""),
            let path = sharedDatabase.dialect.jsonPathValue([vendor, setting])
        else { return nil }
        return try await sqlPointLookUp(.appByVendorSetting, [path, .text(value)]) { row in
            try Rows.app(columns: row)
        }
    }

    /// A point lookup (`SQLPointLookup.messageProgressByID`): one statement, one snapshot, no
    /// JSON column of the message decoded.
    public func messageProgress(id: Int64) async throws -> MessageProgressSnapshot? {
        let slices = sharedDatabase.dialect.sharesWorkInSlices
        return try await sqlPointLookUp(.messageProgressByID, [.integer(id)]) { row in
            MessageProgressSnapshot(
                state: try Rows.messageState(row.string(0)), total: row.optionalInt64(1).map { Int($0) },
                startedAt: row.optionalInt64(2).map(SQLTime.date),
                completedAt: row.optionalInt64(3).map(SQLTime.date), cursor: row.int64(4),
                counts: Rows.deliveryCounts(row, from: 5), failures: try Rows.reasonCounts(row.string(11)),
                skips: try Rows.reasonCounts(row.string(12)),
                sliceCursors: slices ? try Rows.sliceCursors(row.optionalString(13)) : [:])
        }
    }
}
