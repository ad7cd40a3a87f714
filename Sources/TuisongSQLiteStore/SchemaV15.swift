import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

extension Schema {
    static let v15Identifier = "v15-open-channels"

    /// A channel is a name a transport registry declares (`harmony` is not in v9's list): the
    /// CHECKs keep only its shape, `^[a-z][a-z0-9_-]{0,31}$` without a regex (SQLite has none
    /// built in); the registry decides which names exist. An Android credential table still
    /// refuses `apns`: APNs credentials live in `credentials`.
    static let channelShape =
        "channel <> '' AND length(channel) <= 32 AND channel NOT GLOB '*[^a-z0-9_-]*'"
        + " AND substr(channel, 1, 1) GLOB '[a-z]'"

    /// The CHECK texts v9 stored (ALTER TABLE keeps a column's text verbatim; v13's DROP COLUMN
    /// on deliveries left it as it was), each replaced once in its table's CREATE TABLE text.
    static let v15Edits: [(table: String, old: String, new: String)] = [
        ("devices", v9ChannelCheck, "CHECK (\(channelShape))"),
        ("deliveries", v9ChannelCheck, "CHECK (\(channelShape))"),
        (
            "channel_credentials", "CHECK (channel IN ('fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo'))",
            "CHECK (channel <> 'apns' AND \(channelShape))"
        ),
    ]
    static let v9ChannelCheck = "CHECK (channel IN ('apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo'))"

    /// A column CHECK cannot be altered, and `devices` and `deliveries` may hold millions of
    /// rows: the stored CREATE TABLE texts are edited in place (`editTableTexts`).
    static func v15OpenChannels(_ db: Database) throws {
        try editTableTexts(db, migration: v15Identifier, v15Edits)
    }

    /// Replaces `old` by `new` in each table's stored CREATE TABLE text, for a change no stored
    /// row can violate (a CHECK), instead of rebuilding tables that may hold millions of rows,
    /// as SQLite documents ("Making Other Kinds Of Table Schema Changes", lang_altertable.html):
    /// `writable_schema`, the `sql` of each table in `sqlite_schema`, `schema_version` bumped
    /// (every other connection re-reads the schema before its next statement), then
    /// `integrity_check` of each edited table (a read, which also checks every stored row
    /// against the new CHECK). GRDB leaves `SQLITE_DBCONFIG_DEFENSIVE` off, and all of it runs in
    /// the migration's transaction: a failure rolls it back. A table whose text does not hold
    /// `old` exactly once fails the migration rather than being skipped (one edit a table).
    static func editTableTexts(
        _ db: Database, migration: String, _ edits: [(table: String, old: String, new: String)]
    ) throws {
        var edited: [(table: String, sql: String)] = []
        for edit in edits {
            guard
                let sql = try String.fetchOne(
                    db, sql: "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?",
                    arguments: [edit.table])
            else {
                throw StoreError(.unavailable, "\(migration): no table \(edit.table)")
            }
            let parts = sql.components(separatedBy: edit.old)
            guard parts.count == 2 else {
                throw StoreError(
                    .unavailable,
                    "\(migration): \(edit.table) holds \(parts.count - 1) copies of \(edit.old), expected one")
            }
            edited.append((edit.table, parts.joined(separator: edit.new)))
        }
        let version = try Int.fetchOne(db, sql: "PRAGMA schema_version") ?? 0
        try db.execute(sql: "PRAGMA writable_schema = ON")
        do {
            for (table, sql) in edited {
                try db.execute(
                    sql: "UPDATE sqlite_schema SET sql = ? WHERE type = 'table' AND name = ?", arguments: [sql, table])
                guard db.changesCount == 1 else {
                    throw StoreError(.unavailable, "\(migration): \(table) was not updated")
                }
            }
            try db.execute(sql: "PRAGMA schema_version = \(version + 1)")
        } catch {
            try? db.execute(sql: "PRAGMA writable_schema = OFF")
            throw error
        }
        try db.execute(sql: "PRAGMA writable_schema = OFF")
        db.clearSchemaCache()
        for (table, _) in edited {
            let result = try String.fetchAll(db, sql: "PRAGMA integrity_check(\(table))")
            guard result == ["ok"] else {
                throw StoreError(.unavailable, "\(migration): integrity_check(\(table)): \(result)")
            }
        }
    }

    /// A database file migrated through `identifier` and no further, as an older binary left
    /// it, on a connection the caller keeps (tests of a later migration seed rows through it).
    static func openDatabase(path: String, through identifier: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path)
        try migrator.migrate(pool, upTo: identifier)
        return pool
    }
}
