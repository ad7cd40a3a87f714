import Foundation
import TuisongCore

/// What a database backend (`SQLiteStore`, `PostgresStore`) hands the queries written once for
/// both: an executor inside a read or a write, and the store's clock. The queries are defaults
/// of this protocol's extensions (`SQLStoreBackend+*.swift`), each one `SQLQuery` whose dialect
/// writes the placeholders; a backend writes by hand only what really differs between the
/// databases (the work queue and its leases, progress and slice counters, badge batching, the
/// audience page hot path, bulk import, the change feed, migrations), and its file says why.
public protocol SQLStoreBackend: Sendable {
    /// `body` on one snapshot (SQLite: a deferred transaction; PostgreSQL: on one pooled
    /// connection, each statement its own).
    func sqlRead<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// `body` in one transaction: committed when it returns, rolled back when it throws.
    func sqlWrite<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// A write that is one statement, atomic by itself (PostgreSQL: without BEGIN and COMMIT,
    /// one round trip; SQLite: as `sqlWrite`).
    @discardableResult
    func sqlWriteStatement<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T
    /// Now, in the store's milliseconds (`SQLTime`), from its clock.
    var nowMilliseconds: Int64 { get }
}

extension SQLRow: ColumnValues {
    package func isNull(_ index: Int32) -> Bool { values[Int(index)].isNull }
    package func int64(_ index: Int32) -> Int64 { values[Int(index)].int ?? 0 }
    package func string(_ index: Int32) -> String { values[Int(index)].string ?? "" }
    /// The column's bytes (a blob, or a text's UTF-8), empty for NULL.
    package func bytes(_ index: Int32) -> [UInt8] { values[Int(index)].bytes ?? [] }
    package func date(_ index: Int32) -> Date { SQLTime.date(int64(index)) }
    package func optionalDate(_ index: Int32) -> Date? { optionalInt64(index).map(SQLTime.date) }
}

extension Rows {
    /// The one row `query` returns (an `INSERT … RETURNING`), or `.unavailable`.
    package static func returned(_ db: any SQLExecutor, _ query: SQLQuery, _ what: String) throws -> SQLRow {
        guard let row = try db.fetchOne(query) else {
            throw StoreError(.unavailable, "\(what) … RETURNING returned no row")
        }
        return row
    }
}

/// Milliseconds of a time interval, rounded, as the store keeps durations.
package enum SQLDuration {
    package static func milliseconds(_ interval: TimeInterval) -> Int64 { Int64((interval * 1000).rounded()) }
}
