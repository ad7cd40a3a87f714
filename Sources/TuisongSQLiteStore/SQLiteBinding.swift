internal import GRDBSQLite
import TuisongCore

/// Values bound to a prepared statement's placeholders straight through SQLite, in order
/// (parameter 1 first): the one way the store binds a statement it keeps (point readers, quick
/// reads, kept write statements). GRDB's `StatementArguments` converts each value through an
/// existential and a generic initializer the runtime instantiates per call.
enum SQLiteBinding {
    /// SQLITE_TRANSIENT: SQLite copies the bound text or bytes before `bind` returns.
    static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Binds `values`; a count that is not the statement's placeholder count is refused before
    /// anything is bound. An empty blob is bound as a zero-length blob, not as NULL (SQLite
    /// takes a null pointer for NULL, and an empty array has none).
    /// - Returns: nil when every value is bound; else the position SQLite refused and its code.
    static func bind(
        _ values: [SQLValue], to statement: OpaquePointer, sql: @autoclosure () -> String
    ) throws -> (position: Int32, code: Int32)? {
        let placeholders = sqlite3_bind_parameter_count(statement)
        guard Int(placeholders) == values.count else {
            throw StoreError(.unavailable, "\(values.count) values for the \(placeholders) placeholders of \(sql())")
        }
        for (index, value) in values.enumerated() {
            let position = Int32(index + 1)
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(statement, position)
            case .integer(let v): code = sqlite3_bind_int64(statement, position, v)
            case .real(let v): code = sqlite3_bind_double(statement, position, v)
            case .text(let v): code = sqlite3_bind_text(statement, position, v, -1, transient)
            case .blob(let v):
                code =
                    v.isEmpty
                    ? sqlite3_bind_zeroblob(statement, position, 0)
                    : v.withUnsafeBytes {
                        sqlite3_bind_blob(statement, position, $0.baseAddress, Int32($0.count), transient)
                    }
            }
            guard code == SQLITE_OK else { return (position, code) }
        }
        return nil
    }
}
