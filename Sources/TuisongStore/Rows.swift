import Foundation
import GRDB
import TuisongCore

/// Timestamps are stored as integer milliseconds since 1970 (see `Schema`).
/// Positional column access shared by GRDB rows and `PointReaders` rows, so one decoder
/// serves both.
protocol ColumnValues {
    func isNull(_ index: Int32) -> Bool
    /// 0 for NULL.
    func int64(_ index: Int32) -> Int64
    /// "" for NULL.
    func string(_ index: Int32) -> String
}

extension ColumnValues {
    func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }
    func optionalString(_ index: Int32) -> String? { isNull(index) ? nil : string(index) }
}

extension Row: ColumnValues {
    func isNull(_ index: Int32) -> Bool { hasNull(atIndex: Int(index)) }
    func int64(_ index: Int32) -> Int64 { (self[Int(index)] as Int64?) ?? 0 }
    func string(_ index: Int32) -> String { (self[Int(index)] as String?) ?? "" }
}

/// Column lists and row decoding. Rows are read by position: the column lists below and the
/// decoders are kept side by side so they cannot drift apart.
enum Rows {
    /// `"user"` is quoted: PostgreSQL reserves the word (SQLite takes either spelling).
    static let deviceColumns = """
        id, app_id, token, environment, "user", locale, im_account, created_at, updated_at, \
        invalidated_at, invalid_reason, credential_selector, channel
        """
    /// How many columns `deviceColumns` lists (a query may add its own after them).
    static let deviceColumnCount = 13

    /// `deviceColumns` qualified with the alias `d`, for joins.
    static let qualifiedDeviceColumns = deviceColumns.split(separator: ",")
        .map { "d." + $0.trimmingCharacters(in: .whitespaces) }
        .joined(separator: ", ")

    static func device(_ row: Row) throws -> Device { try device(columns: row) }

    static func device(columns row: some ColumnValues) throws -> Device {
        let environmentName = row.string(3)
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw StoreError(
                .unavailable, "devices.environment holds unknown value \(environmentName)")
        }
        let channelName = row.string(12)
        guard let channel = PushChannel(rawValue: channelName) else {
            throw StoreError(.unavailable, "devices.channel holds a channel this build does not speak: \(channelName)")
        }
        return Device(
            id: row.int64(0), appID: row.int64(1), token: row.string(2), environment: environment,
            user: row.optionalString(4), locale: row.optionalString(5), imAccount: row.optionalString(6),
            createdAt: SQLTime.date(row.int64(7)), updatedAt: SQLTime.date(row.int64(8)),
            invalidatedAt: row.optionalInt64(9).map(SQLTime.date), invalidReason: row.optionalString(10),
            credentialSelector: row.optionalString(11), channel: channel)
    }

    static let appColumns =
        "id, name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at"

    static func app(_ row: Row) throws -> App { try app(columns: row) }

    static func app(columns row: some ColumnValues) throws -> App {
        let settings: [String: [String: String]]
        do {
            settings = try JSONDecoder().decode([String: [String: String]].self, from: Data(row.string(4).utf8))
        } catch {
            throw StoreError(
                .unavailable,
                "apps.vendor_settings of app \(row.int64(0)) is not an object of string objects: \(error)"
            )
        }
        return App(
            id: row.int64(0), name: row.string(1), bundleID: row.string(2), apiKeyHash: row.string(3),
            createdAt: SQLTime.date(row.int64(5)), updatedAt: SQLTime.date(row.int64(6)),
            vendorSettings: settings)
    }

    static func vendorSettingsJSON(_ settings: [String: [String: String]]) throws -> String {
        let encoder = JSONEncoder()
        // Sorted keys: the same settings always produce the same text.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(settings), as: UTF8.self)
    }
}

/// The opaque cursor of keyset pagination: base64url (no padding) of the decimal id of the
/// last item returned. Opaque so that callers do not build their own; strict so that a
/// corrupted cursor is reported rather than silently restarting the listing.
enum Cursor {
    static func encode(_ id: Int64) -> String {
        Data(String(id).utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func decode(_ cursor: String) throws -> Int64 {
        var base64 = cursor.replacingOccurrences(of: "-", with: "+")
            .replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.utf8.count % 4) % 4)
        guard let data = Data(base64Encoded: base64),
            let text = String(data: data, encoding: .utf8),
            let id = Int64(text), id >= 0,
            encode(id) == cursor  // rejects leading zeros, "+1" and other aliases
        else {
            throw StoreError(.invalidCursor, "not a cursor this store issued: \(cursor.prefix(64))")
        }
        return id
    }
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
        default:
            // BUSY, LOCKED, IOERR, FULL, CANTOPEN, READONLY, CORRUPT, a closed connection, …:
            // the store cannot serve the request now; the caller answers 503.
            return StoreError(.unavailable, text)
        }
    }
}
