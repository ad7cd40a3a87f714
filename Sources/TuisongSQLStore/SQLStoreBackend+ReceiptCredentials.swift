import Foundation
import TuisongCore

// ReceiptSettingsStore, written once: an app's callback credentials per service (the key sealed
// by the gateway). The first one of a service is inserted with ON CONFLICT DO NOTHING, so two
// nodes making it at once both end with the one stored first.
extension SQLStoreBackend {
    public func receiptCallbackCredentials(appID: Int64) async throws -> ReceiptCallbackCredentials {
        try await sqlRead { db in
            guard let app = try db.fetchOne("SELECT derived_callback_credentials FROM apps WHERE id = \(appID)") else {
                return ReceiptCallbackCredentials()
            }
            var byChannel: [PushChannel: ReceiptCallbackCredential] = [:]
            for row in try db.fetchAll(
                """
                SELECT channel, user_name, encrypted_key, updated_at FROM receipt_callback_credentials
                WHERE app_id = \(appID)
                """)
            {
                guard let channel = PushChannel(rawValue: row.string(0)) else { continue }
                byChannel[channel] = ReceiptCallbackCredential(
                    appID: appID, channel: channel, userName: row.string(1), encryptedKey: row.bytes(2),
                    updatedAt: row.date(3))
            }
            return ReceiptCallbackCredentials(byChannel: byChannel, predatesStoredCredentials: app.int64(0) != 0)
        }
    }

    public func addReceiptCallbackCredential(_ credential: ReceiptCallbackCredential) async throws
        -> ReceiptCallbackCredential
    {
        try await sqlWrite { db in
            guard try db.fetchOne("SELECT id FROM apps WHERE id = \(credential.appID)") != nil else {
                throw StoreError.notFound("app \(credential.appID)")
            }
            try db.run(
                """
                INSERT INTO receipt_callback_credentials (app_id, channel, user_name, encrypted_key, updated_at)
                VALUES (\(credential.appID), \(credential.channel.rawValue), \(credential.userName),
                    \(credential.encryptedKey), \(SQLTime.milliseconds(credential.updatedAt)))
                ON CONFLICT (app_id, channel) DO NOTHING
                """)
            guard
                let row = try db.fetchOne(
                    """
                    SELECT user_name, encrypted_key, updated_at FROM receipt_callback_credentials
                    WHERE app_id = \(credential.appID) AND channel = \(credential.channel.rawValue)
                    """)
            else { throw StoreError.notFound("app \(credential.appID)") }
            return ReceiptCallbackCredential(
                appID: credential.appID, channel: credential.channel, userName: row.string(0),
                encryptedKey: row.bytes(1), updatedAt: row.date(2))
        }
    }

    public func replaceReceiptCallbackCredential(_ credential: ReceiptCallbackCredential) async throws {
        try await sqlWrite { db in
            guard try db.fetchOne("SELECT id FROM apps WHERE id = \(credential.appID)") != nil else {
                throw StoreError.notFound("app \(credential.appID)")
            }
            try db.run(
                """
                INSERT INTO receipt_callback_credentials (app_id, channel, user_name, encrypted_key, updated_at)
                VALUES (\(credential.appID), \(credential.channel.rawValue), \(credential.userName),
                    \(credential.encryptedKey), \(SQLTime.milliseconds(credential.updatedAt)))
                ON CONFLICT (app_id, channel) DO UPDATE SET user_name = excluded.user_name,
                    encrypted_key = excluded.encrypted_key, updated_at = excluded.updated_at
                """)
        }
    }
}
