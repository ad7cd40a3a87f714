import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// Audience pages (the fan-out's hot path) and releasing held deliveries, PostgreSQL's way; the
// audience count and the three `releaseHeldDeliveries` are written once
// (`SQLStoreBackend+Messages`). Why not shared: a page is one statement whose lists (accounts,
// device ids, tokens) go in as one array parameter, so each query keeps one text, prepared
// once per connection (SQLite reads its lists in chunked `IN` lists off GRDB cursors); held
// deliveries move their slice's counters (`deliveries.slice`), which SQLite does not have.
extension PostgresStore {
    // MARK: audience

    public func audiencePage(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after cursor: Int64, limit: Int,
        withRecipientDetails: Bool
    ) async throws -> [AudienceEntry] {
        let request = AudiencePageRequest(
            appID: appID, audience: audience, environment: environment, after: cursor, limit: limit,
            withRecipientDetails: withRecipientDetails)
        return try await read { conn in try Self.audiencePage(conn, request) }
    }

    /// Many pages on one connection, one statement each (the first pages of many small messages).
    public func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]] {
        guard !requests.isEmpty else { return [] }
        return try await read { conn in try requests.map { try Self.audiencePage(conn, $0) } }
    }

    static func audiencePage(_ conn: PostgresConnection, _ request: AudiencePageRequest) throws -> [AudienceEntry] {
        let appID = request.appID
        let environment = request.environment
        let cursor = request.after
        let withRecipientDetails = request.withRecipientDetails
        let limit = Int64(max(1, request.limit))
        switch request.audience {
        case .all:
            return try Self.deviceEntries(
                conn, where: "d.app_id = \(appID) AND d.id > \(cursor)", environment: environment, limit: limit,
                details: withRecipientDetails)
        case .tag(let name):
            // From the tag's memberships (its primary key range), as SQLite reads it: a small tag
            // of a large app never walks the app's devices.
            return try Self.deviceEntries(
                conn, from: "device_tags dt JOIN devices d ON d.id = dt.device_id",
                // `d.id > cursor` too: without it the planner may walk `devices` from its start
                // on every page (a merge join), measured 20–110 ms a page against 0.6 ms.
                where: """
                    dt.tag_id = (SELECT id FROM tags WHERE app_id = \(appID) AND name = \(name)) \
                    AND dt.device_id > \(cursor) AND d.id > \(cursor)
                    """,
                environment: environment, limit: limit, details: withRecipientDetails)
        case .accounts(let accounts):
            guard !accounts.isEmpty else { return [] }
            return try Self.deviceEntries(
                conn,
                where: """
                    d.app_id = \(appID) AND d.im_account = ANY(\(PostgresArrayLiteral.texts(accounts))::text[]) \
                    AND d.id > \(cursor)
                    """,
                environment: environment, limit: limit, details: true)
        case .allAccounts:
            return try Self.deviceEntries(
                conn, where: "d.app_id = \(appID) AND d.im_account IS NOT NULL AND d.id > \(cursor)",
                environment: environment, limit: limit, details: true)
        case .devices(let ids):
            let wanted = AudienceLists.wantedDevices(ids, after: cursor, limit: Int(limit))
            guard !wanted.isEmpty else { return [] }
            let rows = try conn.run(
                """
                SELECT \(raw: Self.entryColumns(details: withRecipientDetails)), d.invalidated_at FROM devices d
                WHERE d.app_id = \(appID) AND d.id = ANY(\(PostgresArrayLiteral.integers(wanted))::bigint[])
                """
            ).rows
            let invalidatedColumn = withRecipientDetails ? 10 : 6
            var found: [Int64: PostgresRow] = [:]
            for row in rows { found[row.int64(at: 0)] = row }
            return try AudienceLists.devicePage(wanted, found: found, environment: environment) { row in
                (try Self.entry(row, details: withRecipientDetails), !row[invalidatedColumn].isNull)
            }
        case .tagSelection(let selection):
            // The page's devices by their tags, then read as a list of them.
            let ids = try TagSelectionPages.deviceIDs(
                PostgresExecutor(conn), appID: appID, selection: selection, after: cursor, limit: Int(limit))
            var listed = request
            listed.audience = .devices(ids)
            return try audiencePage(conn, listed)
        case .tokens(let tokens):
            let (start, slice) = AudienceLists.tokenSlice(tokens, after: cursor, limit: Int(limit))
            guard !slice.isEmpty else { return [] }
            let rows = try conn.run(
                """
                SELECT \(raw: Self.entryColumns(details: withRecipientDetails)), d.invalidated_at FROM devices d
                WHERE d.app_id = \(appID) AND d.token = ANY(\(PostgresArrayLiteral.texts(slice))::text[])
                """
            ).rows
            let invalidatedColumn = withRecipientDetails ? 10 : 6
            var registered: [String: PostgresRow] = [:]
            for row in rows { registered[row[1].string ?? ""] = row }
            return try AudienceLists.tokenPage(slice, start: start, registered: registered, environment: environment) {
                row in (try Self.entry(row, details: withRecipientDetails), !row[invalidatedColumn].isNull)
            }
        }
    }

    // MARK: deliveries

    /// Held rows of the app's messages matching `condition` go back to `queued`, due now, with
    /// the counters moved along: those of the slice row each delivery belongs to
    /// (`deliveries.slice`), or the message row's for a message that has no such slice row
    /// (slice 0 of a message never sliced). SQLite keeps them on the message's row only.
    public func sqlReleaseHeld(appID: Int64, matching condition: SQLQuery, now: Date) async throws -> Int {
        let nowMs = SQLTime.milliseconds(now)
        return try await write { conn in
            // One statement moves the rows and says how many per (message, slice).
            let moved = try PostgresExecutor(conn, prepares: true).fetchAll(
                """
                WITH released AS (
                    UPDATE deliveries d SET state = 'queued', next_attempt_at = \(nowMs), updated_at = \(nowMs)
                    FROM messages m
                    WHERE m.id = d.message_id AND m.app_id = \(appID) AND d.state = 'held' AND \(condition)
                    RETURNING d.message_id, d.slice)
                SELECT message_id, slice, count(*) FROM released GROUP BY message_id, slice ORDER BY message_id, slice
                """)
            var total = 0
            for row in moved {
                let (messageID, slice, n) = (row.int64(0), row.int64(1), row.int64(2))
                let onSlice = try conn.run(
                    """
                    UPDATE message_slices SET held = held - \(n), queued = queued + \(n)
                    WHERE message_id = \(messageID) AND slice = \(slice)
                    """)
                if (onSlice.affectedRows ?? 0) == 0 {
                    try conn.run(
                        "UPDATE messages SET held = held - \(n), queued = queued + \(n) WHERE id = \(messageID)")
                }
                total += Int(n)
            }
            return total
        }
    }

    // MARK: plumbing

    /// The columns `entry` reads: the device's, then (with `details`) its account's.
    private static func entryColumns(details: Bool) -> String {
        let columns = "d.id, d.token, d.environment, d.updated_at, d.credential_selector, d.channel"
        return details ? columns + ", d.im_account, d.locale, d.app_state, d.account_id" : columns
    }

    /// A page of valid devices `d` matching `condition`, by id, in one statement; with
    /// `details`, each carries its account, app state and locale (the bound device's copies,
    /// schema v7's), so the page needs no second query. Every environment's devices are read:
    /// those of another than the push's are skipped `other_environment`.
    private static func deviceEntries(
        _ conn: PostgresConnection, from source: String = "devices d", where condition: SQLQuery,
        environment: PushEnvironment?, limit: Int64, details: Bool
    ) throws -> [AudienceEntry] {
        // Planned for each page's own values (an unnamed statement), not a prepared generic plan:
        // with the cursor unknown, PostgreSQL's generic plan for a tag page may walk and sort the
        // whole tag on every page (measured: a 200,000-device push at 16k/s against 120k/s).
        let rows = try conn.runUnprepared(
            """
            SELECT \(raw: entryColumns(details: details)) FROM \(raw: source)
            WHERE \(condition) AND d.invalidated_at IS NULL ORDER BY d.id LIMIT \(limit)
            """
        ).rows
        return AudienceLists.environmentPage(try rows.map { try entry($0, details: details) }, environment: environment)
    }

    /// An audience entry from `entryColumns(details:)`.
    private static func entry(_ row: PostgresRow, details: Bool) throws -> AudienceEntry {
        let environmentName = row[2].string ?? ""
        guard let environment = PushEnvironment(rawValue: environmentName) else {
            throw StoreError(.unavailable, "devices.environment holds unknown value \(environmentName)")
        }
        let id = row.int64(at: 0)
        var entry = AudienceEntry(
            position: id, deviceID: id, token: row[1].string ?? "", environment: environment,
            registeredAt: SQLTime.date(row.int64(at: 3)), credentialSelector: row[4].string)
        let channelName = row[5].string ?? ""
        // As SQLite's: one comparison with the entry's default channel, no parse, for most rows.
        if channelName != entry.channel.rawValue {
            guard let channel = PushChannel(rawValue: channelName) else {
                throw StoreError(
                    .unavailable, "devices.channel holds a channel this build does not speak: \(channelName)")
            }
            entry.channel = channel
        }
        if details {
            entry.details = RecipientDetails(
                account: row[6].string, accountID: row[9].int64,
                appState: row[8].string.flatMap(AppState.init(rawValue:)), locale: row[7].string)
        }
        return entry
    }
}
