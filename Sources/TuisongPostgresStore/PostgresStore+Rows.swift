import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The PostgreSQL store reads rows with the decoders both backends share (`Rows`), by position.
extension PostgresRow: ColumnValues {
    public func isNull(_ index: Int32) -> Bool { self[Int(index)].isNull }
    public func int64(_ index: Int32) -> Int64 { self[Int(index)].int64 ?? 0 }
    public func string(_ index: Int32) -> String { self[Int(index)].string ?? "" }
}

extension PostgresStore {
    static let deviceColumns = Rows.deviceColumns
    static let deviceColumnCount = Rows.deviceColumnCount

    /// A device from a row starting with `deviceColumns`.
    static func device(_ row: PostgresRow) throws -> Device { try Rows.device(columns: row) }
}

/// PostgreSQL array literals sent as one text parameter (`= ANY($1::bigint[])`,
/// `unnest($1::text[])`): one placeholder whatever the number of elements.
enum PostgresArrayLiteral {
    /// `{1,2,3}`.
    static func integers(_ values: some Sequence<Int64>) -> String {
        "{" + values.map(String.init).joined(separator: ",") + "}"
    }

    /// `{"a","b \"c\""}`: every element quoted, `"` and `\` escaped, so any text (commas,
    /// braces, spaces, `NULL`) is taken literally.
    static func texts(_ values: some Sequence<String>) -> String {
        var literal = "{"
        var first = true
        for value in values {
            if !first { literal += "," }
            first = false
            literal += "\""
            for character in value.unicodeScalars {
                if character == "\"" || character == "\\" { literal += "\\" }
                literal.unicodeScalars.append(character)
            }
            literal += "\""
        }
        return literal + "}"
    }
}

extension PostgresStore {
    /// A write that is one statement, run outside an explicit transaction (the statement is
    /// atomic by itself): one round trip instead of BEGIN, statement, COMMIT. Timed for
    /// `writeObserver` and told to `health` as `write` is.
    @discardableResult
    func writeStatement<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        try await health.noting(timedBy: writeObserver, mapError: Self.storeError) {
            try await pool.withConnection(body)
        }
    }
}

extension PostgresRow {
    /// The integer in column `index`, 0 for NULL.
    func int64(at index: Int) -> Int64 { self[index].int64 ?? 0 }
}
