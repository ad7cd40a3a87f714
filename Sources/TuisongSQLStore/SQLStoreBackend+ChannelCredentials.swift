import Foundation
import TuisongCore

// ChannelCredentialStore (every channel's credentials), written once.
extension SQLStoreBackend {
    /// `.conflict` for a credential without an environment of a channel whose credentials serve
    /// one (as its transport declares), or the other way round; `.notFound` for an unknown app.
    public func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord {
        let servesEnvironments = credential.channel.declaration.credentialsServeEnvironments
        guard servesEnvironments == (credential.environment != nil) else {
            let name = credential.channel.withArticle
            throw StoreError(
                .conflict,
                servesEnvironments
                    ? "\(name) credential serves an environment" : "\(name) credential serves no environment")
        }
        let now = nowMilliseconds
        let options = JSONValue.object(credential.options.mapValues(JSONValue.string)).serializedString
        return try await sqlWrite { db in
            let inserted = try db.fetchOne(
                """
                INSERT INTO channel_credentials (app_id, channel, selector, vendor_app_id, client_id,
                    encrypted_secret, created_at, options, secret_digest, environment, both_environments, expires_at)
                VALUES (\(credential.appID), \(credential.channel.rawValue), \(credential.selector),
                    \(credential.vendorAppID), \(credential.clientID), \(credential.encryptedSecret), \(now),
                    \(options), \(credential.secretDigest), \(credential.environment?.rawValue),
                    \(credential.servesBothEnvironments ? 1 : 0), \(credential.expiresAt.map(SQLTime.milliseconds)))
                ON CONFLICT (app_id, secret_digest) DO NOTHING
                RETURNING \(raw: Rows.channelCredentialColumns)
                """)
            if let inserted { return try Rows.channelCredentialRecord(inserted) }
            // A repeated upload (even one racing this): the first is answered, no second row.
            return try Rows.channelCredentialRecord(
                Rows.returned(
                    db,
                    """
                    SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials
                    WHERE app_id = \(credential.appID) AND secret_digest = \(credential.secretDigest)
                    """, "INSERT INTO channel_credentials"))
        }
    }

    public func channelCredential(appID: Int64, secretDigest: String) async throws -> ChannelCredentialRecord? {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials
                WHERE app_id = \(appID) AND secret_digest = \(secretDigest)
                """
            ).map(Rows.channelCredentialRecord)
        }
    }

    public func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] {
        try await sqlRead { db in
            try db.fetchAll(
                "SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials WHERE app_id = \(appID) ORDER BY id"
            ).map(Rows.channelCredentialRecord)
        }
    }

    /// The app's newest working credential for `channel` with exactly `selector` (nil: the one
    /// without), else its newest: a refused upload does not replace one that works.
    public func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws
        -> ChannelCredentialRecord?
    {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials
                WHERE app_id = \(appID) AND channel = \(channel.rawValue)
                    AND selector \(raw: db.dialect.isNotDistinctFrom) \(selector)
                ORDER BY CASE WHEN status = 'failing' THEN 1 ELSE 0 END, id DESC LIMIT 1
                """
            ).map(Rows.channelCredentialRecord)
        }
    }

    /// The app's newest working credential for `channel` without a selector serving
    /// `environment` (its own, or both), else its newest.
    public func activeChannelCredential(appID: Int64, channel: PushChannel, environment: PushEnvironment)
        async throws -> ChannelCredentialRecord?
    {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials
                WHERE app_id = \(appID) AND channel = \(channel.rawValue)
                    AND (environment = \(environment.rawValue) OR both_environments = 1) AND selector IS NULL
                ORDER BY CASE WHEN status = 'failing' THEN 1 ELSE 0 END, id DESC LIMIT 1
                """
            ).map(Rows.channelCredentialRecord)
        }
    }

    public func channelCredential(id: Int64) async throws -> ChannelCredentialRecord? {
        try await sqlRead { db in
            try db.fetchOne("SELECT \(raw: Rows.channelCredentialColumns) FROM channel_credentials WHERE id = \(id)")
                .map(Rows.channelCredentialRecord)
        }
    }

    public func deleteChannelCredential(id: Int64) async throws -> Bool {
        try await sqlWriteStatement { db in try db.run("DELETE FROM channel_credentials WHERE id = \(id)") > 0 }
    }

    public func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        try await sqlWrite { db in
            let before = try db.fetchOne("SELECT app_id, status, channel FROM channel_credentials WHERE id = \(id)")
            try db.run("UPDATE channel_credentials SET status = \(status), status_reason = \(reason) WHERE id = \(id)")
            // `credential.failing` when it has just become failing, in the same transaction.
            if let before, status == "failing", before.string(1) != "failing" {
                try webhooks.credentialFailing(
                    db, appID: before.int64(0), credentialID: id, channel: before.string(2), reason: reason, now: now)
            }
        }
    }
}

extension Rows {
    package static let channelCredentialColumns = """
        id, app_id, channel, selector, vendor_app_id, client_id, encrypted_secret, status, status_reason, created_at, \
        options, secret_digest, environment, both_environments, expires_at
        """

    package static func channelCredentialRecord(_ row: SQLRow) throws -> ChannelCredentialRecord {
        guard let channel = PushChannel(rawValue: row.string(2)) else {
            throw StoreError(
                .unavailable, "channel_credentials row \(row.int64(0)) is for a channel this build does not speak")
        }
        let options = (try? JSONValue(parsing: Array(row.string(10).utf8)))?.objectValue?.compactMapValues(
            \.stringValue)
        var environment: PushEnvironment?
        if let name = row.optionalString(12) {
            guard let known = PushEnvironment(rawValue: name) else {
                throw StoreError(.unavailable, "channel_credentials row \(row.int64(0)) holds unknown values")
            }
            environment = known
        }
        return ChannelCredentialRecord(
            id: row.int64(0), appID: row.int64(1), channel: channel, selector: row.optionalString(3),
            vendorAppID: row.string(4), clientID: row.string(5), encryptedSecret: row.bytes(6),
            options: options ?? [:], status: row.string(7), statusReason: row.optionalString(8),
            createdAt: row.date(9), secretDigest: row.optionalString(11), environment: environment,
            servesBothEnvironments: row.int64(13) != 0, expiresAt: row.optionalDate(14))
    }
}
