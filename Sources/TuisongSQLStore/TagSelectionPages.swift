import Foundation
import TuisongCore

/// The pages of a `TagSelection` audience, written once for both databases: each page is the
/// next `limit` valid devices (fewer only at the end) in id order, read from bounded index
/// ranges so a large app is never copied whole, and a push is accepted without a device list.
///
/// A page is found in rounds. A round reads the next `limit` candidates from one driver — the
/// union of the `anyOf` tags' membership ranges (each `(tag_id, device_id)` primary-key range
/// read at most `limit` deep), else the first `allOf` tag's range, else the app's devices — and
/// keeps those that are valid and pass the other conditions (point look-ups in `device_tags`).
/// Rounds repeat from the last candidate until the page is full or the driver runs out, so the
/// work is proportional to the candidates walked.
package enum TagSelectionPages {
    /// The next page's device ids after `cursor`; fewer than `limit` means the audience is
    /// exhausted. `environment` keeps only that environment's devices (counting); pages are
    /// read without it, their other-environment devices skipped as every query audience's are.
    package static func deviceIDs(
        _ db: any SQLExecutor, appID: Int64, selection: TagSelection, environment: PushEnvironment? = nil,
        after cursor: Int64, limit: Int
    ) throws -> [Int64] {
        guard limit > 0, let plan = try Plan(db, appID: appID, selection: selection) else { return [] }
        var found: [Int64] = []
        var position = cursor
        while found.count < limit {
            let candidates = try plan.candidates(db, appID: appID, after: position, limit: limit)
            guard let last = candidates.last else { break }
            found += try plan.kept(db, candidates, environment: environment).prefix(limit - found.count)
            position = last
            if candidates.count < limit { break }
        }
        return found
    }

    /// How many valid devices the selection holds (of `environment` if given), counting at most
    /// `upTo`.
    package static func count(
        _ db: any SQLExecutor, appID: Int64, selection: TagSelection, environment: PushEnvironment?, upTo: Int?
    ) throws -> Int {
        var total = 0
        var cursor: Int64 = 0
        while true {
            let wanted = min(1000, upTo.map { $0 - total } ?? 1000)
            guard wanted > 0 else { break }
            let ids = try deviceIDs(
                db, appID: appID, selection: selection, environment: environment, after: cursor, limit: wanted)
            total += ids.count
            guard ids.count == wanted, let last = ids.last else { break }
            cursor = last
        }
        return total
    }

    /// The selection's tags as ids; nil when nothing can match (an `allOf` tag no device
    /// carries, or no `anyOf` tag that exists).
    private struct Plan {
        /// Drives the rounds: the union of these tags' ranges; empty = the app's devices.
        var driving: [Int64]
        /// Every one of these must be carried as well (the `allOf` tags not driving).
        var required: [Int64]
        var excluded: [Int64]

        init?(_ db: any SQLExecutor, appID: Int64, selection: TagSelection) throws {
            let names = Set(selection.anyOf + selection.allOf + selection.noneOf)
            var ids: [String: Int64] = [:]
            for chunk in SQLList.chunks(Array(names)) {
                for row in try db.fetchAll(
                    "SELECT id, name FROM tags WHERE app_id = \(appID) AND name IN (\(SQLQuery.list(chunk)))")
                {
                    if let id = row["id"].int, let name = row["name"].string { ids[name] = id }
                }
            }
            var allOf: [Int64] = []
            for name in Set(selection.allOf) {
                guard let id = ids[name] else { return nil }
                allOf.append(id)
            }
            let anyOf = Set(selection.anyOf.compactMap { ids[$0] })
            if !selection.anyOf.isEmpty && anyOf.isEmpty { return nil }
            excluded = Set(selection.noneOf.compactMap { ids[$0] }).sorted()
            if !anyOf.isEmpty {
                driving = anyOf.sorted()
                required = allOf.sorted()
            } else if let first = allOf.min() {
                driving = [first]
                required = allOf.filter { $0 != first }.sorted()
            } else {
                driving = []
                required = []
            }
        }

        /// The next `limit` candidates after `cursor`, in id order.
        func candidates(_ db: any SQLExecutor, appID: Int64, after cursor: Int64, limit: Int) throws -> [Int64] {
            let query: SQLQuery
            if driving.isEmpty {
                query = "SELECT id FROM devices WHERE app_id = \(appID) AND id > \(cursor) ORDER BY id LIMIT \(limit)"
            } else {
                // Each tag's range is read at most `limit` deep; their union's first `limit` ids
                // are the selection's next candidates.
                var union: SQLQuery = ""
                for (index, tag) in driving.enumerated() {
                    if index > 0 { union = union + " UNION " }
                    union =
                        union
                            + """
                            SELECT device_id FROM (SELECT device_id FROM device_tags WHERE tag_id = \(tag) \
                            AND device_id > \(cursor) ORDER BY device_id LIMIT \(limit)) AS range\(raw: String(index))
                            """
                }
                query = "SELECT device_id FROM (\(union)) AS candidates ORDER BY device_id LIMIT \(limit)"
            }
            return try db.fetchAll(query).map { $0.int64(0) }
        }

        /// The candidates that are valid devices (of `environment` if given) passing the
        /// `allOf` and `noneOf` conditions, in id order.
        func kept(_ db: any SQLExecutor, _ candidates: [Int64], environment: PushEnvironment?) throws -> [Int64] {
            var kept: [Int64] = []
            for chunk in SQLList.chunks(candidates.map(SQLValue.integer)) {
                var query: SQLQuery =
                    "SELECT d.id FROM devices d WHERE d.id IN (\(SQLQuery.list(chunk))) AND d.invalidated_at IS NULL"
                if let environment { query = query + " AND d.environment = \(environment.rawValue)" }
                if !required.isEmpty {
                    let tags = SQLList.chunks(required.map(SQLValue.integer))[0]
                    query =
                        query
                            + """
                             AND (SELECT count(*) FROM device_tags x WHERE x.device_id = d.id \
                            AND x.tag_id IN (\(SQLQuery.list(tags)))) = \(Int64(required.count))
                            """
                }
                if !excluded.isEmpty {
                    for tags in SQLList.chunks(excluded.map(SQLValue.integer)) {
                        query =
                            query
                                + """
                                 AND NOT EXISTS (SELECT 1 FROM device_tags x WHERE x.device_id = d.id \
                                AND x.tag_id IN (\(SQLQuery.list(tags))))
                                """
                    }
                }
                kept += try db.fetchAll(query).map { $0.int64(0) }
            }
            return kept.sorted()
        }
    }
}
