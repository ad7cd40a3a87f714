import GRDB
import TuisongSQLStore

// Read-only views of the database's shape, for tests and diagnostics; they keep GRDB out
// of the test target.
extension SQLiteStore {
    /// Names of the tables and indexes in the schema (SQLite's own objects excluded).
    func schemaObjectNames() async throws -> Set<String> {
        try await read { db in
            Set(
                try String.fetchAll(
                    db, sql: "SELECT name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"))
        }
    }

    /// Rows in `table`, which must be one of `schemaObjectNames()`.
    func rowCount(_ table: String) async throws -> Int {
        precondition(table.allSatisfy { $0.isLetter || $0 == "_" }, "not a table name: \(table)")
        return try await read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0
        }
    }

    /// The value of a pragma as the writer connection sees it (`journal_mode`,
    /// `foreign_keys`, `synchronous`, `busy_timeout`, …).
    func writerPragma(_ name: String) async throws -> String {
        precondition(name.allSatisfy { $0.isLetter || $0 == "_" }, "not a pragma name: \(name)")
        return try await write { db in try String.fetchOne(db, sql: "PRAGMA \(name)") ?? "" }
    }
}
