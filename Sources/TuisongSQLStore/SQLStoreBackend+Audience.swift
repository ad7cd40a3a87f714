import Foundation
import TuisongCore

// Audience pages, the fan-out's hot path, written once. A page is one statement: its lists
// (accounts, device ids, tokens) go in as one parameter (`SQLDialect.list`: SQLite walks a JSON
// array with `json_each`, PostgreSQL unnests an array), so each query keeps one text whatever
// the page, prepared once per connection, and its rows are read where they lie (`forEachRow`:
// GRDB's cursor row, libpq's row), no `SQLRow` made. With recipient details (a policy's, an
// account audience's) each entry carries its device's copies of its account, app state and
// locale (schema v7), so the page needs no second query. (On `MessageStore`, so that these
// win over Core's page-after-page `audiencePages`.)
extension MessageStore where Self: SQLStoreBackend {
    public func audiencePage(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after cursor: Int64, limit: Int,
        withRecipientDetails: Bool
    ) async throws -> [AudienceEntry] {
        let request = AudiencePageRequest(
            appID: appID, audience: audience, environment: environment, after: cursor, limit: limit,
            withRecipientDetails: withRecipientDetails)
        return try await sqlRead { db in try AudiencePages.page(db, request) }
    }

    /// Many pages in one read (the first pages of many small messages): one snapshot on SQLite,
    /// one connection on PostgreSQL, one statement a page.
    public func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]] {
        guard !requests.isEmpty else { return [] }
        return try await sqlRead { db in try requests.map { try AudiencePages.page(db, $0) } }
    }
}

package enum AudiencePages {
    package static func page(_ db: any SQLExecutor, _ request: AudiencePageRequest) throws -> [AudienceEntry] {
        let appID = request.appID
        let environment = request.environment
        let cursor = request.after
        let details = request.withRecipientDetails
        let limit = Int64(max(1, request.limit))
        switch request.audience {
        case .all:
            return try deviceEntries(
                db, where: "d.app_id = \(appID) AND d.id > \(cursor)", environment: environment, limit: limit,
                details: details)
        case .tag(let name):
            // From the tag's memberships (its primary key range): a small tag of a large app never
            // walks the app's devices. `d.id > cursor` too: without it PostgreSQL's planner may
            // walk `devices` from its start on every page (a merge join), measured 20–110 ms a
            // page against 0.6 ms.
            return try deviceEntries(
                db, from: "device_tags dt JOIN devices d ON d.id = dt.device_id",
                where: """
                    dt.tag_id = (SELECT id FROM tags WHERE app_id = \(appID) AND name = \(name)) \
                    AND dt.device_id > \(cursor) AND d.id > \(cursor)
                    """,
                orderedBy: "dt.device_id", environment: environment, limit: limit, details: details)
        case .accounts(let accounts):
            guard !accounts.isEmpty else { return [] }
            // The list first, then each account's devices by `devices_by_im_account` (SQLite's
            // CROSS JOIN keeps that order). As `d.im_account IN (SELECT value FROM list)` with
            // `ORDER BY d.id`, SQLite walked the app's devices by id and tested each: every
            // device of the app for a one-account chat message (a Tencent or Easemob message cost
            // 5.1–5.6 ms of CPU instead of 0.9). Each account once, as `IN` would. Planned for
            // each page's values when there are several accounts; one account's page (a chat
            // message's) has one good plan whatever its values, kept on the connection: planned
            // per message on PostgreSQL it cost 0.5 ms of the server's time (issue #47).
            var seen: Set<String> = []
            let distinct = accounts.filter { seen.insert($0).inserted }
            var entries: [AudienceEntry] = []
            var channels = ChannelNames()
            try db.forEachRow(
                """
                SELECT \(raw: entryColumns(details: true)) FROM \(db.dialect.list(distinct)) CROSS JOIN devices d
                WHERE d.app_id = \(appID) AND d.im_account = value AND d.id > \(cursor) AND d.invalidated_at IS NULL
                ORDER BY d.id LIMIT \(limit)
                """, plannedEachRun: distinct.count > 1
            ) { row in entries.append(try entry(row, details: true, channels: &channels)) }
            return AudienceLists.environmentPage(entries, environment: environment)
        case .allAccounts:
            return try deviceEntries(
                db, where: "d.app_id = \(appID) AND d.im_account IS NOT NULL AND d.id > \(cursor)",
                environment: environment, limit: limit, details: true)
        case .devices(let ids):
            let wanted = AudienceLists.wantedDevices(ids, after: cursor, limit: Int(limit))
            guard !wanted.isEmpty else { return [] }
            var found: [Int64: (entry: AudienceEntry, invalidated: Bool)] = [:]
            var channels = ChannelNames()
            // The list first, then each device by its id (SQLite's CROSS JOIN keeps that
            // order): as `d.id IN (list)`, SQLite walked the app's devices instead.
            try db.forEachRow(
                """
                SELECT \(raw: entryColumns(details: details)), d.invalidated_at
                FROM \(db.dialect.list(wanted)) CROSS JOIN devices d WHERE d.id = value AND d.app_id = \(appID)
                """
            ) { row in
                found[row.int64(0)] = (
                    try entry(row, details: details, channels: &channels), !row.isNull(invalidatedColumn(details))
                )
            }
            return AudienceLists.devicePage(wanted, found: found, environment: environment) { $0 }
        case .tagSelection(let selection):
            // The page's devices by their tags, then read as a list of them.
            let ids = try TagSelectionPages.deviceIDs(
                db, appID: appID, selection: selection, after: cursor, limit: Int(limit))
            var listed = request
            listed.audience = .devices(ids)
            return try page(db, listed)
        case .tokens(let tokens):
            let (start, slice) = AudienceLists.tokenSlice(tokens, after: cursor, limit: Int(limit))
            guard !slice.isEmpty else { return [] }
            var registered: [String: (entry: AudienceEntry, invalidated: Bool)] = [:]
            var channels = ChannelNames()
            try db.forEachRow(
                """
                SELECT \(raw: entryColumns(details: details)), d.invalidated_at FROM devices d
                WHERE d.app_id = \(appID) AND d.token IN (SELECT value FROM \(db.dialect.list(slice)))
                """
            ) { row in
                registered[row.string(1)] = (
                    try entry(row, details: details, channels: &channels), !row.isNull(invalidatedColumn(details))
                )
            }
            return AudienceLists.tokenPage(slice, start: start, registered: registered, environment: environment) {
                $0
            }
        }
    }

    /// The columns `entry` reads: the device's, then (with `details`) its account's.
    package static func entryColumns(details: Bool) -> String {
        let columns = "d.id, d.token, d.environment, d.updated_at, d.credential_selector, d.channel"
        return details ? columns + ", d.im_account, d.locale, d.app_state, d.account_id" : columns
    }

    /// Where a list page reads `invalidated_at`: right after `entryColumns(details:)`.
    package static func invalidatedColumn(_ details: Bool) -> Int32 { details ? 10 : 6 }

    /// A page of valid devices `d` matching `condition`, in one statement. Every environment's
    /// devices are read: those of another than the push's are skipped `other_environment`,
    /// counted, not left out unseen. Planned for each page's own values (`plannedEachRun`): with
    /// the cursor unknown, PostgreSQL's generic plan for a tag page may walk and sort the whole
    /// tag on every page (measured: a 200,000-device push at 16k/s against 120k/s).
    private static func deviceEntries(
        _ db: any SQLExecutor, from source: String = "devices d", where condition: SQLQuery,
        orderedBy order: String = "d.id", environment: PushEnvironment?, limit: Int64, details: Bool
    ) throws -> [AudienceEntry] {
        var entries: [AudienceEntry] = []
        var channels = ChannelNames()
        try db.forEachRow(
            """
            SELECT \(raw: entryColumns(details: details)) FROM \(raw: source)
            WHERE \(condition) AND d.invalidated_at IS NULL ORDER BY \(raw: order) LIMIT \(limit)
            """, plannedEachRun: true
        ) { row in entries.append(try entry(row, details: details, channels: &channels)) }
        return AudienceLists.environmentPage(entries, environment: environment)
    }

    /// The channel of a page's previous row: a page's devices are nearly all of one channel, so
    /// on the fan-out path a row costs one comparison of its name, and a name is checked only
    /// where the channel changes (whichever channel it is: no service is the default).
    package struct ChannelNames {
        private var last: PushChannel?

        package init() {}

        package mutating func channel(_ name: String) throws -> PushChannel {
            if let last, last.rawValue == name { return last }
            guard let channel = PushChannel(rawValue: name) else {
                throw StoreError(.unavailable, "devices.channel holds a channel this build does not speak: \(name)")
            }
            last = channel
            return channel
        }
    }

    /// An audience entry from `entryColumns(details:)`.
    package static func entry(_ row: any ColumnValues, details: Bool, channels: inout ChannelNames) throws
        -> AudienceEntry
    {
        let environmentName = row.string(2)
        guard let environment = PushEnvironment(rawValue: environmentName) else {
            throw StoreError(.unavailable, "devices.environment holds unknown value \(environmentName)")
        }
        let id = row.int64(0)
        var entry = AudienceEntry(
            position: id, deviceID: id, token: row.string(1), environment: environment,
            registeredAt: SQLTime.date(row.int64(3)), credentialSelector: row.optionalString(4),
            channel: try channels.channel(row.string(5)))
        if details {
            entry.details = RecipientDetails(
                account: row.optionalString(6), accountID: row.optionalInt64(9),
                appState: row.optionalString(8).flatMap(AppState.init(rawValue:)), locale: row.optionalString(7))
        }
        return entry
    }
}
