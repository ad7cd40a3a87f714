import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The first pages of many small messages, read together (`DeliveryEngine`'s page reads).
///
/// On PostgreSQL every statement is a round trip, and each costs the server more than the
/// lookup it carries (a receive, a send and a wake-up on both ends): read one statement a page,
/// as SQLite reads them, a chat load's page reads were half of the server's statements — one a
/// message, each finding one device (issue #47). Here the list pages of all the requests (token
/// lists, device id lists, account lists: what a chat line's audience is) go in one statement
/// per kind, each row naming the request it answers; other audiences (a tag, all devices) are
/// read a statement each, as before. Each request's entries are then made exactly as its own
/// page would make them (`AudienceLists`).
extension PostgresStore {
    public func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]] {
        guard !requests.isEmpty else { return [] }
        return try await sqlRead { db in try PostgresAudiencePages.pages(db, requests) }
    }
}

enum PostgresAudiencePages {
    /// Every column `AudiencePages.entry` may read (with recipient details), then the device's
    /// `invalidated_at`; the request's index follows them in each statement.
    private static let columns = AudiencePages.entryColumns(details: true) + ", d.invalidated_at"
    private static let invalidated = AudiencePages.invalidatedColumn(true)
    private static let request: Int32 = invalidated + 1

    static func pages(_ db: any SQLExecutor, _ requests: [AudiencePageRequest]) throws -> [[AudienceEntry]] {
        var pages = [[AudienceEntry]](repeating: [], count: requests.count)
        var tokens = KeyedLists<String>()
        var devices = KeyedLists<Int64>()
        var accounts = AccountLists()
        for (index, request) in requests.enumerated() {
            let limit = max(1, request.limit)
            switch request.audience {
            case .tokens(let list):
                let (start, slice) = AudienceLists.tokenSlice(list, after: request.after, limit: limit)
                if !slice.isEmpty { tokens.add(index, request, start: start, slice) }
            case .devices(let ids):
                let wanted = AudienceLists.wantedDevices(ids, after: request.after, limit: limit)
                if !wanted.isEmpty { devices.add(index, request, wanted) }
            case .accounts(let list):
                var seen: Set<String> = []
                let distinct = list.filter { seen.insert($0).inserted }
                if !distinct.isEmpty { accounts.add(index, request, distinct: distinct) }
            case .all, .allAccounts, .tag, .tagSelection:
                pages[index] = try AudiencePages.page(db, request)
            }
        }
        let registered = try tokens.read(
            db, requests, keys: PostgresArray.text(tokens.keys), keyType: "text", join: "d.token = v.key"
        ) { $0.string(1) }
        for (index, list) in tokens.lists {
            pages[index] = AudienceLists.tokenPage(
                list.keys, start: list.start, registered: registered[index] ?? [:],
                environment: requests[index].environment
            ) { $0 }
        }
        let found = try devices.read(
            db, requests, keys: PostgresArray.int(devices.keys), keyType: "bigint", join: "d.id = v.key"
        ) { $0.int64(0) }
        for (index, list) in devices.lists {
            pages[index] = AudienceLists.devicePage(
                list.keys, found: found[index] ?? [:], environment: requests[index].environment
            ) { $0 }
        }
        try accounts.read(db, requests, into: &pages)
        return pages
    }

    /// A row's entry as its request's own page decodes it (`AudiencePages.entry`), and whether
    /// the device is invalidated.
    private static func decode(
        _ row: any ColumnValues, _ request: AudiencePageRequest, channels: inout AudiencePages.ChannelNames
    ) throws -> (entry: AudienceEntry, invalidated: Bool) {
        (
            try AudiencePages.entry(row, details: request.withRecipientDetails, channels: &channels),
            !row.isNull(invalidated)
        )
    }

    /// The token or device id pages: each listed key with its app and request, joined in one
    /// statement with the app's device of that key (`join`: by the `(app_id, token)` unique
    /// index, or by id).
    private struct KeyedLists<Key: Hashable> {
        var lists: [Int: (start: Int, keys: [Key])] = [:]
        var requestIndexes: [Int64] = []
        var appIDs: [Int64] = []
        var keys: [Key] = []

        mutating func add(_ index: Int, _ request: AudiencePageRequest, start: Int = 0, _ list: [Key]) {
            lists[index] = (start, list)
            for key in list {
                requestIndexes.append(Int64(index))
                appIDs.append(request.appID)
                keys.append(key)
            }
        }

        /// Each request's devices by key: `keyArray` is `keys` as an array of `keyType`, and
        /// `key` reads a row's key back.
        func read(
            _ db: any SQLExecutor, _ requests: [AudiencePageRequest], keys keyArray: PostgresValue, keyType: String,
            join: String, key: (any ColumnValues) -> Key
        ) throws -> [Int: [Key: (entry: AudienceEntry, invalidated: Bool)]] {
            guard !lists.isEmpty else { return [:] }
            var found: [Int: [Key: (entry: AudienceEntry, invalidated: Bool)]] = [:]
            var channels = AudiencePages.ChannelNames()
            try db.forEachRow(
                """
                SELECT \(raw: columns), v.request FROM unnest(\(PostgresArray.int(requestIndexes))::bigint[],
                    \(PostgresArray.int(appIDs))::bigint[], \(keyArray)::\(raw: keyType)[]) AS v(request, app_id, key)
                JOIN devices d ON d.app_id = v.app_id AND \(raw: join)
                """
            ) { row in
                let index = Int(row.int64(request))
                found[index, default: [:]][key(row)] = try decode(row, requests[index], channels: &channels)
            }
            return found
        }
    }

    /// The account pages: for each account of each request, its first `limit` valid devices
    /// after the cursor (by `devices_by_im_account`); a request's page is the first `limit` of
    /// its accounts' together, in id order — the same devices as one query over all its
    /// accounts with `ORDER BY d.id LIMIT limit`, since each account's part of those is among
    /// that account's first `limit`.
    private struct AccountLists {
        var limits: [Int: Int] = [:]
        var requestIndexes: [Int64] = []
        var appIDs: [Int64] = []
        var accounts: [String] = []
        var cursors: [Int64] = []
        var perAccountLimits: [Int64] = []

        mutating func add(_ index: Int, _ request: AudiencePageRequest, distinct: [String]) {
            let limit = max(1, request.limit)
            limits[index] = limit
            for account in distinct {
                requestIndexes.append(Int64(index))
                appIDs.append(request.appID)
                accounts.append(account)
                cursors.append(request.after)
                perAccountLimits.append(Int64(limit))
            }
        }

        func read(_ db: any SQLExecutor, _ requests: [AudiencePageRequest], into pages: inout [[AudienceEntry]])
            throws
        {
            guard !limits.isEmpty else { return }
            var entries: [Int: [AudienceEntry]] = [:]
            var channels = AudiencePages.ChannelNames()
            // Every entry of an account page carries its recipient details, whatever the request
            // asked: the policies read them (as `AudiencePages.page` does).
            try db.forEachRow(
                """
                SELECT d.*, v.request FROM unnest(\(PostgresArray.int(requestIndexes))::bigint[], \(PostgresArray.int(appIDs))::bigint[],
                    \(PostgresArray.text(accounts))::text[], \(PostgresArray.int(cursors))::bigint[], \(PostgresArray.int(perAccountLimits))::bigint[])
                    AS v(request, app_id, account, after_id, page_limit)
                CROSS JOIN LATERAL (
                    SELECT \(raw: columns) FROM devices d
                    WHERE d.app_id = v.app_id AND d.im_account = v.account AND d.id > v.after_id
                        AND d.invalidated_at IS NULL
                    ORDER BY d.id LIMIT v.page_limit
                ) d
                """
            ) { row in
                let index = Int(row.int64(request))
                entries[index, default: []].append(try AudiencePages.entry(row, details: true, channels: &channels))
            }
            for (index, limit) in limits {
                var page = entries[index] ?? []
                page.sort { $0.position < $1.position }
                pages[index] = AudienceLists.environmentPage(
                    Array(page.prefix(limit)), environment: requests[index].environment)
            }
        }
    }
}
