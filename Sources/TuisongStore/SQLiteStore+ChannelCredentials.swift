import Foundation
import GRDB
import TuisongCore

extension SQLiteStore: ChannelCredentialStore {
    private static let channelCredentialColumns = """
        id, app_id, channel, selector, vendor_app_id, client_id, encrypted_secret, status, status_reason, created_at,
        options
        """

    public func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord {
        guard credential.channel.isAndroid else {
            throw StoreError(.conflict, "an APNs credential belongs in credentials, not channel_credentials")
        }
        let now = nowMilliseconds
        let id: Int64 = try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO channel_credentials (app_id, channel, selector, vendor_app_id, client_id,
                        encrypted_secret, created_at, options)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    credential.appID, credential.channel.rawValue, credential.selector, credential.vendorAppID,
                    credential.clientID, Data(credential.encryptedSecret), now,
                    JSONValue.object(credential.options.mapValues(JSONValue.string)).serializedString,
                ])
            return db.lastInsertedRowID
        }
        guard let record = try await channelCredential(id: id) else {
            throw StoreError.notFound("channel credential \(id)")
        }
        return record
    }

    public func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] {
        try await read { db in
            try Row.fetchAll(
                db,
                sql: "SELECT \(Self.channelCredentialColumns) FROM channel_credentials WHERE app_id = ? ORDER BY id",
                arguments: [appID]
            ).map(Self.channelCredentialRecord)
        }
    }

    public func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws
        -> ChannelCredentialRecord?
    {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(Self.channelCredentialColumns) FROM channel_credentials
                    WHERE app_id = ? AND channel = ? AND selector IS ?
                    ORDER BY id DESC LIMIT 1
                    """,
                arguments: [appID, channel.rawValue, selector]
            ).map(Self.channelCredentialRecord)
        }
    }

    public func channelCredential(id: Int64) async throws -> ChannelCredentialRecord? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.channelCredentialColumns) FROM channel_credentials WHERE id = ?",
                arguments: [id]
            ).map(Self.channelCredentialRecord)
        }
    }

    public func deleteChannelCredential(id: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM channel_credentials WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    public func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE channel_credentials SET status = ?, status_reason = ? WHERE id = ?",
                arguments: [status, reason, id])
        }
    }

    private static func channelCredentialRecord(_ row: Row) throws -> ChannelCredentialRecord {
        let channelName: String = row[2]
        guard let channel = PushChannel(rawValue: channelName) else {
            throw StoreError(
                .unavailable, "channel_credentials row \(row[0] as Int64) is for a channel this build does not speak")
        }
        let secret: Data = row[6]
        let optionsText: String = row[10]
        let options = (try? JSONValue(parsing: Array(optionsText.utf8)))?.objectValue?.compactMapValues(\.stringValue)
        return ChannelCredentialRecord(
            id: row[0], appID: row[1], channel: channel, selector: row[3], vendorAppID: row[4], clientID: row[5],
            encryptedSecret: Array(secret), options: options ?? [:], status: row[7], statusReason: row[8],
            createdAt: SQLTime.date(row[9]))
    }
}
