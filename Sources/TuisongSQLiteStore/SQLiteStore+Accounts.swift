import Foundation
import GRDB
import TuisongCore
import TuisongSQLStore

// The IM account write SQLite does its own way (the rest is written once in
// `SQLStoreBackend+Accounts`): binding a device (this backend's device upsert).
extension SQLiteStore: AccountStore {
    public func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device {
        let now = nowMilliseconds
        return try await write { db in
            let executor = GRDBExecutor(db: db)
            try AccountQueries.insertAccount(executor, appID: appID, account: account, now: now)
            let registered = try Self.applyRegistration(db, appID: appID, registration, now: now).device
            return try AccountQueries.bindAccount(
                executor, deviceID: registered.id, appID: appID, account: account,
                credentialSelector: credentialSelector, now: now)
        }
    }
}
