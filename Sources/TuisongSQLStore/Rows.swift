import Foundation
import TuisongCore

/// Timestamps are stored as integer milliseconds since 1970 (see `Schema`).
/// Positional column access shared by GRDB rows and `PointReaders` rows, so one decoder
/// serves both.
public protocol ColumnValues {
    func isNull(_ index: Int32) -> Bool
    /// 0 for NULL.
    func int64(_ index: Int32) -> Int64
    /// "" for NULL.
    func string(_ index: Int32) -> String
}

extension ColumnValues {
    package func optionalInt64(_ index: Int32) -> Int64? { isNull(index) ? nil : int64(index) }
    package func optionalString(_ index: Int32) -> String? { isNull(index) ? nil : string(index) }
}

/// Column lists and row decoding. Rows are read by position: the column lists below and the
/// decoders are kept side by side so they cannot drift apart.
package enum Rows {
    /// `"user"` is quoted: PostgreSQL reserves the word (SQLite takes either spelling).
    package static let deviceColumns = """
        id, app_id, token, environment, "user", locale, im_account, created_at, updated_at, \
        invalidated_at, invalid_reason, credential_selector, channel
        """
    /// How many columns `deviceColumns` lists (a query may add its own after them).
    package static let deviceColumnCount = 13

    /// The columns a device registration inserts, in the order of its values.
    package static let deviceInsertColumns = """
        app_id, token, environment, "user", locale, created_at, updated_at, credential_selector, channel
        """

    /// What registering a device already known by (app, token) changes, after its `INSERT`: the
    /// environment and channel are the registration's; a nil user, locale or credential
    /// selector leaves the stored one, `DeviceRegistration.noUser` ('') clears the user; the
    /// registration clears any invalidation.
    package static let deviceUpsertConflict = """
        ON CONFLICT (app_id, token) DO UPDATE SET
            environment = excluded.environment,
            channel = excluded.channel,
            "user" = CASE WHEN excluded."user" = '' THEN NULL ELSE coalesce(excluded."user", devices."user") END,
            locale = coalesce(excluded.locale, devices.locale),
            credential_selector = coalesce(excluded.credential_selector, devices.credential_selector),
            updated_at = excluded.updated_at,
            invalidated_at = NULL,
            invalid_reason = NULL
        """

    /// `deviceColumns` qualified with the alias `d`, for joins.
    package static let qualifiedDeviceColumns = deviceColumns.split(separator: ",")
        .map { "d." + $0.trimmingCharacters(in: .whitespaces) }
        .joined(separator: ", ")

    package static func device(columns row: some ColumnValues) throws -> Device {
        let environmentName = row.string(3)
        guard let environment = PushEnvironment(rawValue: environmentName) else {
            throw StoreError(
                .unavailable, "devices.environment holds unknown value \(environmentName)")
        }
        let channelName = row.string(12)
        guard let channel = PushChannel(rawValue: channelName) else {
            throw StoreError(.unavailable, "devices.channel holds a channel this build does not speak: \(channelName)")
        }
        return Device(
            id: row.int64(0), appID: row.int64(1), token: row.string(2), environment: environment,
            // '' is `DeviceRegistration.noUser` kept by a first registration that detached.
            user: row.optionalString(4).flatMap { $0.isEmpty ? nil : $0 }, locale: row.optionalString(5),
            imAccount: row.optionalString(6),
            createdAt: SQLTime.date(row.int64(7)), updatedAt: SQLTime.date(row.int64(8)),
            invalidatedAt: row.optionalInt64(9).map(SQLTime.date), invalidReason: row.optionalString(10),
            credentialSelector: row.optionalString(11), channel: channel)
    }

    /// The columns of a message, in the order `message(columns:cursor:)` reads them; a
    /// backend's message select (`SQLStoreBackend.sqlMessageSelect`) adds, after `held`, the
    /// failures and the skips as JSON objects `{"reason": count, …}`, then its cursor.
    package static let messageColumns = """
        m.id, m.app_id, m.vendor, m.vendor_message_id, m.audience, m.content, m.options, m.state, \
        m.send_at, m.labels, m.created_at, m.started_at, m.completed_at, m.total, m.vendor_context
        """

    /// The columns a new message's row is inserted with, in the order of its values.
    package static let messageInsertColumns = """
        app_id, vendor, vendor_message_id, audience, content, options, labels, state, send_at, created_at, \
        vendor_context
        """

    /// A message's `state` column.
    package static func messageState(_ name: String) throws -> MessageState {
        guard let state = MessageState(rawValue: name) else {
            throw StoreError(.unavailable, "messages.state holds unknown value \(name)")
        }
        return state
    }

    /// The six counts of a message from column `first` on: queued, sending, delivered, failed,
    /// skipped, held.
    package static func deliveryCounts(_ row: some ColumnValues, from first: Int32) -> DeliveryCounts {
        var counts = DeliveryCounts()
        counts.queued = Int(row.int64(first))
        counts.sending = Int(row.int64(first + 1))
        counts.delivered = Int(row.int64(first + 2))
        counts.failed = Int(row.int64(first + 3))
        counts.skipped = Int(row.int64(first + 4))
        counts.held = Int(row.int64(first + 5))
        return counts
    }

    /// A message from a backend's message select: columns 0–14 `messageColumns`, 15–20 the
    /// counts (queued, sending, delivered, failed, skipped, held), 21 the failures and 22 the
    /// skips as JSON objects; the cursor is the backend's.
    package static func message(columns row: some ColumnValues, cursor: Int64) throws -> MessageRecord {
        let state = try messageState(row.string(7))
        let counts = deliveryCounts(row, from: 15)
        return MessageRecord(
            id: row.int64(0), appID: row.int64(1), vendor: row.string(2), vendorMessageID: row.optionalString(3),
            audience: try JSONText.decode(Audience.self, row.string(4)),
            content: try JSONText.decode(PushContent.self, row.string(5)),
            options: try JSONText.decode(PushOptions.self, row.string(6)), state: state,
            sendAt: row.optionalInt64(8).map(SQLTime.date),
            labels: try JSONText.decode([String: String].self, row.string(9)),
            createdAt: SQLTime.date(row.int64(10)), startedAt: row.optionalInt64(11).map(SQLTime.date),
            completedAt: row.optionalInt64(12).map(SQLTime.date), total: row.optionalInt64(13).map { Int($0) },
            cursor: cursor, counts: counts, failures: try reasonCounts(row.string(21)),
            skips: try reasonCounts(row.string(22)),
            vendorContext: try row.optionalString(14).map { try JSONText.decode(JSONValue.self, $0) })
    }

    /// A row of the console's message activity: id, app id, state, created, started and
    /// completed at, total, then the counts (queued, sending, delivered, failed, skipped, held).
    package static func messageActivity(columns row: some ColumnValues) throws -> MessageActivity {
        let state = try messageState(row.string(2))
        let counts = deliveryCounts(row, from: 7)
        return MessageActivity(
            id: row.int64(0), appID: row.int64(1), state: state, createdAt: SQLTime.date(row.int64(3)),
            startedAt: row.optionalInt64(4).map(SQLTime.date), completedAt: row.optionalInt64(5).map(SQLTime.date),
            total: row.optionalInt64(6).map { Int($0) }, counts: counts)
    }

    /// `{"reason": count, …}` as `json_group_object` (SQLite) or `json_object_agg` (PostgreSQL)
    /// writes it; empty text for none.
    /// `{"slice": cursor, …}` as a message's slice cursors are read (NULL: no slices).
    package static func sliceCursors(_ text: String?) throws -> [Int64: Int64] {
        guard let text else { return [:] }
        var cursors: [Int64: Int64] = [:]
        for (slice, cursor) in try JSONText.decode([String: Int64].self, text) {
            if let number = Int64(slice) { cursors[number] = cursor }
        }
        return cursors
    }

    package static func reasonCounts(_ text: String) throws -> [String: Int] {
        guard !text.isEmpty, text != "{}" else { return [:] }
        guard case .object(let members) = try JSONValue(parsing: Array(text.utf8)) else {
            throw StoreError(.unavailable, "reason counts are not a JSON object: \(text)")
        }
        var counts: [String: Int] = [:]
        for (reason, value) in members { counts[reason] = Int(value.intValue ?? 0) }
        return counts
    }

    package static let appColumns =
        "id, name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at, app_receipts"

    package static func app(columns row: some ColumnValues) throws -> App {
        let settings: [String: [String: String]]
        do {
            settings = try vendorSettings(row.string(4))
        } catch {
            throw StoreError(
                .unavailable,
                "apps.vendor_settings of app \(row.int64(0)) is not an object of string objects: \(error)"
            )
        }
        return App(
            id: row.int64(0), name: row.string(1), bundleID: row.string(2), apiKeyHash: row.string(3),
            createdAt: SQLTime.date(row.int64(5)), updatedAt: SQLTime.date(row.int64(6)),
            vendorSettings: settings, appReceipts: row.int64(7) != 0)
    }

    /// `apps.vendor_settings` read with the project's parser, not Foundation's `JSONDecoder`:
    /// a vendor's API reads its app on every call, and the decoder's generic machinery was the
    /// largest part of that read (issue #47's profile).
    package static func vendorSettings(_ text: String) throws -> [String: [String: String]] {
        guard case .object(let vendors) = try JSONValue(parsing: text) else {
            throw VendorSettingsError(reason: "not an object")
        }
        var settings: [String: [String: String]] = [:]
        settings.reserveCapacity(vendors.count)
        for (vendor, value) in vendors {
            guard case .object(let fields) = value else {
                throw VendorSettingsError(reason: "\(vendor) is not an object")
            }
            var strings: [String: String] = [:]
            strings.reserveCapacity(fields.count)
            for (name, field) in fields {
                guard case .string(let string) = field else {
                    throw VendorSettingsError(reason: "\(vendor).\(name) is not a string")
                }
                strings[name] = string
            }
            settings[vendor] = strings
        }
        return settings
    }

    struct VendorSettingsError: Error, CustomStringConvertible {
        var reason: String
        var description: String { reason }
    }

    package static func vendorSettingsJSON(_ settings: [String: [String: String]]) throws -> String {
        let encoder = JSONEncoder()
        // Sorted keys: the same settings always produce the same text.
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(settings), as: UTF8.self)
    }
}

/// The opaque cursor of keyset pagination: base64url (no padding) of the decimal id of the
/// last item returned. Opaque so that callers do not build their own; strict so that a
/// corrupted cursor is reported rather than silently restarting the listing.
package enum Cursor {
    package static func encode(_ id: Int64) -> String {
        Data(String(id).utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    package static func decode(_ cursor: String) throws -> Int64 {
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

/// JSON columns: sorted keys so equal values are equal text.
package enum JSONText {
    package static func encode<T: Encodable>(_ value: T) throws -> String {
        // JSONValue's encoder: JSONEncoder here was ~6 % of the CPU per accepted chat message.
        String(decoding: try JSONValue.encodedText(value), as: UTF8.self)
    }

    package static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        do {
            return try JSONDecoder().decode(type, from: Data(text.utf8))
        } catch {
            throw StoreError(.unavailable, "stored JSON does not decode as \(type): \(error)")
        }
    }
}

/// The cursor of a token-ordered listing: `t.` + the last token returned. Tokens are not
/// secret from the console that lists them, so the cursor need not hide one.
package enum TokenCursor {
    package static func encode(_ token: String) -> String { "t." + token }

    package static func decode(_ cursor: String) throws -> String {
        let token = cursor.dropFirst(2)
        guard cursor.hasPrefix("t."), !token.isEmpty, token.utf8.count <= 200,
            token.utf8.allSatisfy({
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0)
            })
        else {
            throw StoreError(.invalidCursor, "not a cursor this store issued: \(cursor.prefix(64))")
        }
        return String(token)
    }
}

/// A new message's row as both stores insert it (`Rows.messageInsertColumns`, plus the
/// idempotency key committed with it): the job's parts encoded as the stored JSON texts.
package struct MessageRow: Sendable {
    package var appID: Int64
    package var vendor: String
    package var vendorMessageID: String?
    package var audience: String
    /// `PushContent` as JSON.
    package var content: String
    package var options: String
    package var labels: String
    package var state: String
    package var sendAt: Int64?
    package var createdAt: Int64
    package var vendorContext: String?
    /// Committed with the message (`PushJob.idempotencyKey`).
    package var idempotencyKey: String?

    package init(_ job: PushJob, state: MessageState, createdAt: Int64) throws {
        appID = job.appID
        vendor = job.vendor
        vendorMessageID = job.vendorMessageID
        audience = try JSONText.encode(job.audience)
        content = try JSONText.encode(job.content)
        options = try JSONText.encode(job.options)
        labels = try JSONText.encode(job.labels)
        self.state = state.rawValue
        sendAt = job.sendAt.map(SQLTime.milliseconds)
        self.createdAt = createdAt
        vendorContext = try job.vendorContext.map { try JSONText.encode($0) }
        idempotencyKey = job.idempotencyKey
    }
}
