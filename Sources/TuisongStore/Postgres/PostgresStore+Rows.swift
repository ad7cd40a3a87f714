import Foundation
import TuisongCore
import TuisongPostgres

// Column lists and row decoders of the PostgreSQL store, read by position as `Rows` does for
// SQLite: each list and its decoder are kept side by side so they cannot drift apart.
extension PostgresStore {
    /// The device columns in the order `device(_:)` reads them. `"user"` is quoted (reserved).
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

    /// A device from a row starting with `deviceColumns`. Throws `.unavailable` for an
    /// environment or channel this build does not know (as `Rows.device` does for SQLite).
    static func device(_ row: PostgresRow) throws -> Device {
        let environmentName = row[3].string ?? ""
        guard let environment = APNsEnvironment(rawValue: environmentName) else {
            throw StoreError(.unavailable, "devices.environment holds unknown value \(environmentName)")
        }
        let channelName = row[12].string ?? ""
        guard let channel = PushChannel(rawValue: channelName) else {
            throw StoreError(.unavailable, "devices.channel holds a channel this build does not speak: \(channelName)")
        }
        return Device(
            id: row[0].int64 ?? 0, appID: row[1].int64 ?? 0, token: row[2].string ?? "", environment: environment,
            user: row[4].string, locale: row[5].string, imAccount: row[6].string,
            createdAt: SQLTime.date(row[7].int64 ?? 0), updatedAt: SQLTime.date(row[8].int64 ?? 0),
            invalidatedAt: row[9].int64.map(SQLTime.date), invalidReason: row[10].string,
            credentialSelector: row[11].string, channel: channel)
    }

    /// The app columns in the order `app(_:)` reads them.
    static let appColumns = "id, name, bundle_id, api_key_hash, vendor_settings, created_at, updated_at"

    /// An app from a row starting with `appColumns`. Throws `.unavailable` when the vendor
    /// settings are not an object of string objects.
    static func app(_ row: PostgresRow) throws -> App {
        let id = row[0].int64 ?? 0
        let settings: [String: [String: String]]
        do {
            settings = try JSONDecoder().decode(
                [String: [String: String]].self, from: Data((row[4].string ?? "").utf8))
        } catch {
            throw StoreError(
                .unavailable, "apps.vendor_settings of app \(id) is not an object of string objects: \(error)")
        }
        return App(
            id: id, name: row[1].string ?? "", bundleID: row[2].string ?? "", apiKeyHash: row[3].string ?? "",
            createdAt: SQLTime.date(row[5].int64 ?? 0), updatedAt: SQLTime.date(row[6].int64 ?? 0),
            vendorSettings: settings)
    }
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
    /// `writeObserver` as `write` is.
    @discardableResult
    func writeStatement<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) throws -> T) async throws -> T {
        let started = ContinuousClock.now
        defer { writeObserver?(ContinuousClock.now - started) }
        return try await read(body)
    }
}
