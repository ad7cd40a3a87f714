import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The IM account write PostgreSQL does its own way (the rest is written once in
// `SQLStoreBackend+Accounts`): binding a device (this backend's device upsert).
extension PostgresStore: AccountStore {
    public func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device {
        let now = nowMilliseconds
        return try await write { conn in
            let executor = PostgresExecutor(conn, prepares: true)
            try AccountQueries.insertAccount(executor, appID: appID, account: account, now: now)
            let deviceID = try Self.applyBindingRegistration(conn, appID: appID, registration, now: now)
            return try AccountQueries.bindAccount(
                executor, deviceID: deviceID, appID: appID, account: account, credentialSelector: credentialSelector,
                now: now)
        }
    }

    // MARK: plumbing

    /// The registration half of `bindDevice` (SQLite's `applyRegistration`), inside its write:
    /// the same upsert and tag replacement as `registerDevice`. Returns the device's id.
    private static func applyBindingRegistration(
        _ conn: PostgresConnection, appID: Int64, _ registration: DeviceRegistration, now: Int64
    ) throws -> Int64 {
        let device = try registered(conn.run(upsertDevice(appID: appID, registration, now: now))).device
        if let tags = registration.tags {
            let names = PostgresArrayLiteral.texts(tags.map(\.value))
            for statement in retagStatements(appID: appID, token: registration.token.value, names: names) {
                try conn.run(statement)
            }
        }
        return device.id
    }
}

extension PostgresRow {
    /// The integer in column `index`, 0 for NULL.
    func int64(at index: Int) -> Int64 { self[index].int64 ?? 0 }
}
