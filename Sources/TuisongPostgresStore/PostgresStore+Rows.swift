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
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        bytes.reserveCapacity(values.underestimatedCount * 8 + 2)
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            bytes.append(contentsOf: String(value).utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `{"a","b \"c\""}`: every element quoted, `"` and `\` escaped, so any text (commas,
    /// braces, spaces, `NULL`) is taken literally.
    static func texts(_ values: some Sequence<String>) -> String {
        texts(nullable: values.lazy.map { Optional($0) })
    }

    /// As `texts(_:)`, nil written `NULL` (unquoted: SQL's NULL, not the text).
    ///
    /// Built from each element's UTF-8 bytes, a run at a time between the bytes to escape (a
    /// multi-byte character never contains `"` or `\`). Built a scalar at a time (and the
    /// integers' as an array of strings joined), the array literals of a chat load's statements
    /// took ~5 % of the gateway's CPU on PostgreSQL (perf, Tencent at saturation; issue #47).
    static func texts(nullable values: some Sequence<String?>) -> String {
        let quote = UInt8(ascii: "\"")
        let backslash = UInt8(ascii: "\\")
        var bytes: [UInt8] = [UInt8(ascii: "{")]
        var first = true
        for value in values {
            if !first { bytes.append(UInt8(ascii: ",")) }
            first = false
            guard var value else {
                bytes.append(contentsOf: "NULL".utf8)
                continue
            }
            bytes.append(quote)
            value.withUTF8 { utf8 in
                var run = 0
                for index in utf8.indices where utf8[index] == quote || utf8[index] == backslash {
                    bytes.append(contentsOf: utf8[run..<index])
                    bytes.append(backslash)
                    run = index
                }
                bytes.append(contentsOf: utf8[run...])
            }
            bytes.append(quote)
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
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
