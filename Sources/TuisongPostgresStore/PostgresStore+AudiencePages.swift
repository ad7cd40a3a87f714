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
        var tokens = TokenLists()
        var devices = DeviceLists()
        var accounts = AccountLists()
        for (index, request) in requests.enumerated() {
            let limit = max(1, request.limit)
            switch request.audience {
            case .tokens(let list):
                let (start, slice) = AudienceLists.tokenSlice(list, after: request.after, limit: limit)
                if !slice.isEmpty { tokens.add(index, request, start: start, slice: slice) }
            case .devices(let ids):
                let wanted = AudienceLists.wantedDevices(ids, after: request.after, limit: limit)
                if !wanted.isEmpty { devices.add(index, request, wanted: wanted) }
            case .accounts(let list):
                var seen: Set<String> = []
                let distinct = list.filter { seen.insert($0).inserted }
                if !distinct.isEmpty { accounts.add(index, request, distinct: distinct) }
            case .all, .allAccounts, .tag, .tagSelection:
                pages[index] = try AudiencePages.page(db, request)
            }
        }
        try tokens.read(db, requests, into: &pages)
        try devices.read(db, requests, into: &pages)
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

    /// The token pages: each token with its app and request, joined with the app's device of
    /// that token (the `(app_id, token)` unique index).
    private struct TokenLists {
        var slices: [Int: (start: Int, slice: [String])] = [:]
        var requestIndexes: [Int64] = []
        var appIDs: [Int64] = []
        var tokens: [String] = []

        mutating func add(_ index: Int, _ request: AudiencePageRequest, start: Int, slice: [String]) {
            slices[index] = (start, slice)
            for token in slice {
                requestIndexes.append(Int64(index))
                appIDs.append(request.appID)
                tokens.append(token)
            }
        }

        func read(_ db: any SQLExecutor, _ requests: [AudiencePageRequest], into pages: inout [[AudienceEntry]])
            throws
        {
            guard !slices.isEmpty else { return }
            var registered: [Int: [String: (entry: AudienceEntry, invalidated: Bool)]] = [:]
            var channels = AudiencePages.ChannelNames()
            try db.forEachRow(
                """
                SELECT \(raw: columns), v.request FROM unnest(\(integers(requestIndexes))::bigint[],
                    \(integers(appIDs))::bigint[], \(texts(tokens))::text[]) AS v(request, app_id, token)
                JOIN devices d ON d.app_id = v.app_id AND d.token = v.token
                """
            ) { row in
                let index = Int(row.int64(request))
                registered[index, default: [:]][row.string(1)] = try decode(row, requests[index], channels: &channels)
            }
            for (index, slice) in slices {
                pages[index] = AudienceLists.tokenPage(
                    slice.slice, start: slice.start, registered: registered[index] ?? [:],
                    environment: requests[index].environment
                ) { $0 }
            }
        }
    }

    /// The device id pages: each id with its app and request, joined with that device of the app.
    private struct DeviceLists {
        var wanted: [Int: [Int64]] = [:]
        var requestIndexes: [Int64] = []
        var appIDs: [Int64] = []
        var ids: [Int64] = []

        mutating func add(_ index: Int, _ request: AudiencePageRequest, wanted list: [Int64]) {
            wanted[index] = list
            for id in list {
                requestIndexes.append(Int64(index))
                appIDs.append(request.appID)
                ids.append(id)
            }
        }

        func read(_ db: any SQLExecutor, _ requests: [AudiencePageRequest], into pages: inout [[AudienceEntry]])
            throws
        {
            guard !wanted.isEmpty else { return }
            var found: [Int: [Int64: (entry: AudienceEntry, invalidated: Bool)]] = [:]
            var channels = AudiencePages.ChannelNames()
            try db.forEachRow(
                """
                SELECT \(raw: columns), v.request FROM unnest(\(integers(requestIndexes))::bigint[],
                    \(integers(appIDs))::bigint[], \(integers(ids))::bigint[]) AS v(request, app_id, id)
                JOIN devices d ON d.id = v.id AND d.app_id = v.app_id
                """
            ) { row in
                let index = Int(row.int64(request))
                found[index, default: [:]][row.int64(0)] = try decode(row, requests[index], channels: &channels)
            }
            for (index, list) in wanted {
                pages[index] = AudienceLists.devicePage(
                    list, found: found[index] ?? [:], environment: requests[index].environment
                ) { $0 }
            }
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
                SELECT d.*, v.request FROM unnest(\(integers(requestIndexes))::bigint[], \(integers(appIDs))::bigint[],
                    \(texts(accounts))::text[], \(integers(cursors))::bigint[], \(integers(perAccountLimits))::bigint[])
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

    private static func integers(_ values: [Int64]) -> SQLValue { .text(PostgresArrayLiteral.integers(values)) }
    private static func texts(_ values: [String]) -> SQLValue { .text(PostgresArrayLiteral.texts(values)) }
}
