import Foundation
import TuisongCore
import TuisongPostgres

// ChannelCredentialStore (Android services' credentials); SQLiteStore+ChannelCredentials.swift
// is the contract.
extension PostgresStore {
    static let channelCredentialColumns = """
        id, app_id, channel, selector, vendor_app_id, client_id, encrypted_secret, status, status_reason, created_at,
        options
        """

    /// `.conflict` for an APNs credential (those are `credentials`), `.notFound` for an unknown app.
    public func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord {
        guard credential.channel.isAndroid else {
            throw StoreError(.conflict, "an APNs credential belongs in credentials, not channel_credentials")
        }
        let now = nowMilliseconds
        let options = JSONValue.object(credential.options.mapValues(JSONValue.string)).serializedString
        return try await writeStatement { conn in
            let rows = try conn.run(
                """
                INSERT INTO channel_credentials (app_id, channel, selector, vendor_app_id, client_id,
                    encrypted_secret, created_at, options)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                RETURNING \(Self.channelCredentialColumns)
                """,
                [
                    .int(credential.appID), .text(credential.channel.rawValue), PostgresValue(credential.selector),
                    .text(credential.vendorAppID), .text(credential.clientID), .bytes(credential.encryptedSecret),
                    .int(now), .text(options),
                ]
            ).rows
            guard let row = rows.first else {
                throw StoreError(.unavailable, "INSERT INTO channel_credentials returned no row")
            }
            return try Self.channelCredentialRecord(row)
        }
    }

    public func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] {
        try await read { conn in
            try conn.run(
                "SELECT \(Self.channelCredentialColumns) FROM channel_credentials WHERE app_id = $1 ORDER BY id",
                [.int(appID)]
            ).rows.map(Self.channelCredentialRecord)
        }
    }

    /// The app's newest credential for `channel` with exactly `selector` (nil: the one without).
    public func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws
        -> ChannelCredentialRecord?
    {
        try await read { conn in
            try conn.run(
                """
                SELECT \(Self.channelCredentialColumns) FROM channel_credentials
                WHERE app_id = $1 AND channel = $2 AND selector IS NOT DISTINCT FROM $3
                ORDER BY id DESC LIMIT 1
                """,
                [.int(appID), .text(channel.rawValue), PostgresValue(selector)]
            ).rows.first.map(Self.channelCredentialRecord)
        }
    }

    public func channelCredential(id: Int64) async throws -> ChannelCredentialRecord? {
        try await read { conn in
            try conn.run("SELECT \(Self.channelCredentialColumns) FROM channel_credentials WHERE id = $1", [.int(id)])
                .rows.first.map(Self.channelCredentialRecord)
        }
    }

    public func deleteChannelCredential(id: Int64) async throws -> Bool {
        try await writeStatement { conn in
            (try conn.run("DELETE FROM channel_credentials WHERE id = $1", [.int(id)]).affectedRows ?? 0) > 0
        }
    }

    public func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        try await writeStatement { conn in
            try conn.run(
                "UPDATE channel_credentials SET status = $1, status_reason = $2 WHERE id = $3",
                [.text(status), PostgresValue(reason), .int(id)])
        }
    }

    private static func channelCredentialRecord(_ row: PostgresRow) throws -> ChannelCredentialRecord {
        let id = row[0].int64 ?? 0
        guard let channel = PushChannel(rawValue: row[2].string ?? "") else {
            throw StoreError(.unavailable, "channel_credentials row \(id) is for a channel this build does not speak")
        }
        let options = (try? JSONValue(parsing: Array((row[10].string ?? "").utf8)))?.objectValue?.compactMapValues(
            \.stringValue)
        return ChannelCredentialRecord(
            id: id, appID: row[1].int64 ?? 0, channel: channel, selector: row[3].string,
            vendorAppID: row[4].string ?? "", clientID: row[5].string ?? "", encryptedSecret: row[6].bytes ?? [],
            options: options ?? [:], status: row[7].string ?? "", statusReason: row[8].string,
            createdAt: SQLTime.date(row[9].int64 ?? 0))
    }
}
