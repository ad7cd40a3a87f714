import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// Not `row[i] as String?`: GRDB's optional decode looks up Optional<String>'s generic metadata
// on every call, a measurable share of a large fan-out's CPU (audience pages read through here).
extension Row: ColumnValues {
    public func isNull(_ index: Int32) -> Bool { hasNull(atIndex: Int(index)) }
    public func int64(_ index: Int32) -> Int64 { hasNull(atIndex: Int(index)) ? 0 : self[Int(index)] as Int64 }
    public func string(_ index: Int32) -> String { hasNull(atIndex: Int(index)) ? "" : self[Int(index)] as String }
}

extension Rows {
    static func device(_ row: Row) throws -> Device { try device(columns: row) }
    static func app(_ row: Row) throws -> App { try app(columns: row) }
}

/// Translates GRDB's errors into `StoreError`, keeping SQLite's code and message in the text.
enum ErrorMapping {
    static func storeError(_ error: any Error) -> any Error {
        if error is StoreError || error is CancellationError { return error }
        guard let databaseError = error as? DatabaseError else {
            // A row GRDB could not decode, an encoding failure: no GRDB type leaves the module.
            return StoreError(.unavailable, String(describing: error))
        }
        // "SQLite error 2067 (constraint failed): UNIQUE constraint failed: apps.api_key_hash"
        let text =
            "SQLite error \(databaseError.extendedResultCode): \(databaseError.message ?? "no message")"
        switch databaseError.extendedResultCode {
        case .SQLITE_CONSTRAINT_FOREIGNKEY:
            // The row refers to a parent that is not there (in practice: an unknown app).
            return StoreError(.notFound, text)
        case .SQLITE_CONSTRAINT_UNIQUE, .SQLITE_CONSTRAINT_PRIMARYKEY:
            return StoreError(.conflict, text)
        default:
            break
        }
        switch databaseError.resultCode {
        case .SQLITE_CONSTRAINT:
            // CHECK, NOT NULL, datatype: the caller sent a value the schema refuses.
            return StoreError(.conflict, text)
        case .SQLITE_FULL:
            // "database or disk is full" (or the file's page limit reached).
            return StoreError(.unavailable, text, unavailability: .storageFull)
        case .SQLITE_IOERR, .SQLITE_CANTOPEN, .SQLITE_READONLY, .SQLITE_CORRUPT, .SQLITE_NOTADB:
            return StoreError(.unavailable, text, unavailability: .databaseDown)
        default:
            // BUSY, LOCKED, IOERR, FULL, CANTOPEN, READONLY, CORRUPT, a closed connection, …:
            // the store cannot serve the request now; the caller answers 503.
            return StoreError(.unavailable, text)
        }
    }
}
