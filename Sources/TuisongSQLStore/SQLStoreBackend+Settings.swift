import Foundation
import TuisongCore

// SettingsStore and CredentialStore (APNs credentials), written once for both databases.
extension SQLStoreBackend {
    public func setting(_ key: String) async throws -> String? {
        try await sqlRead { db in try db.fetchOne("SELECT value FROM settings WHERE key = \(key)")?[0].string }
    }

    public func setSetting(_ key: String, value: String) async throws {
        try await sqlWriteStatement { db in
            try db.run(
                """
                INSERT INTO settings (key, value) VALUES (\(key), \(value))
                ON CONFLICT (key) DO UPDATE SET value = excluded.value
                """)
        }
    }

    /// `true` when the setting was stored, `false` when the key already had a value (kept).
    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool {
        try await sqlWriteStatement { db in
            try db.run("INSERT INTO settings (key, value) VALUES (\(key), \(value)) ON CONFLICT (key) DO NOTHING") > 0
        }
    }

    /// Throws `.notFound` for an unknown app. A credential of the app with the same digest (a
    /// repeated upload, even one racing this) is answered instead of a second row.
    public func addCredential(_ credential: NewCredential) async throws -> CredentialRecord {
        let topics = try JSONText.encode(credential.topics)
        let now = nowMilliseconds
        return try await sqlWrite { db in
            let inserted = try db.fetchOne(
                """
                INSERT INTO credentials (app_id, kind, environment, team_id, key_id, subject, topic, expires_at,
                    encrypted_secret, created_at, selector, both_environments, secret_digest)
                VALUES (\(credential.appID), \(credential.kind.rawValue), \(credential.environment.rawValue),
                    \(credential.teamID), \(credential.keyID), \(credential.subject), \(topics),
                    \(credential.expiresAt.map(SQLTime.milliseconds)), \(credential.encryptedSecret), \(now),
                    \(credential.selector), \(credential.servesBothEnvironments ? 1 : 0), \(credential.secretDigest))
                ON CONFLICT (app_id, secret_digest) DO NOTHING
                RETURNING \(raw: Rows.credentialColumns)
                """)
            if let inserted { return try Rows.credentialRecord(inserted) }
            return try Rows.credentialRecord(
                Rows.returned(
                    db,
                    """
                    SELECT \(raw: Rows.credentialColumns) FROM credentials
                    WHERE app_id = \(credential.appID) AND secret_digest = \(credential.secretDigest)
                    """, "INSERT INTO credentials"))
        }
    }

    public func credential(appID: Int64, secretDigest: String) async throws -> CredentialRecord? {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT \(raw: Rows.credentialColumns) FROM credentials
                WHERE app_id = \(appID) AND secret_digest = \(secretDigest)
                """
            ).map(Rows.credentialRecord)
        }
    }

    public func credentials(appID: Int64) async throws -> [CredentialRecord] {
        try await sqlRead { db in
            try db.fetchAll(
                "SELECT \(raw: Rows.credentialColumns) FROM credentials WHERE app_id = \(appID) ORDER BY id"
            ).map(Rows.credentialRecord)
        }
    }

    /// The app's newest working credential without a selector serving `environment` (its own,
    /// or both: a `.p8` key, a universal certificate), else its newest.
    public func activeCredential(appID: Int64, environment: PushEnvironment) async throws -> CredentialRecord? {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT \(raw: Rows.credentialColumns) FROM credentials
                WHERE app_id = \(appID) AND (environment = \(environment.rawValue) OR both_environments = 1)
                    AND selector IS NULL
                ORDER BY CASE WHEN status = 'failing' THEN 1 ELSE 0 END, id DESC LIMIT 1
                """
            ).map(Rows.credentialRecord)
        }
    }

    public func credential(id: Int64) async throws -> CredentialRecord? {
        try await sqlRead { db in
            try db.fetchOne("SELECT \(raw: Rows.credentialColumns) FROM credentials WHERE id = \(id)")
                .map(Rows.credentialRecord)
        }
    }

    public func deleteCredential(id: Int64) async throws -> Bool {
        try await sqlWriteStatement { db in try db.run("DELETE FROM credentials WHERE id = \(id)") > 0 }
    }

    /// `.conflict` for a status the schema refuses; an unknown id changes nothing.
    public func setCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        let webhooks = webhookOutbox
        let now = nowMilliseconds
        try await sqlWrite { db in
            let before = try db.fetchOne("SELECT app_id, status FROM credentials WHERE id = \(id)")
            try db.run("UPDATE credentials SET status = \(status), status_reason = \(reason) WHERE id = \(id)")
            // `credential.failing` when it has just become failing, in the same transaction.
            if let before, status == "failing", before.string(1) != "failing" {
                try webhooks.credentialFailing(
                    db, appID: before.int64(0), credentialID: id, channel: "apns", reason: reason, now: now)
            }
        }
    }
}

extension Rows {
    package static let credentialColumns = """
        id, app_id, kind, environment, team_id, key_id, subject, topic, expires_at, encrypted_secret, \
        status, status_reason, created_at, selector, both_environments, secret_digest
        """

    package static func credentialRecord(_ row: SQLRow) throws -> CredentialRecord {
        guard let kind = CredentialKind(rawValue: row.string(2)),
            let environment = PushEnvironment(rawValue: row.string(3))
        else { throw StoreError(.unavailable, "credentials row \(row.int64(0)) holds unknown values") }
        return CredentialRecord(
            id: row.int64(0), appID: row.int64(1), kind: kind, environment: environment,
            teamID: row.optionalString(4), keyID: row.optionalString(5), subject: row.optionalString(6),
            topics: try row.optionalString(7).map { try JSONText.decode([String].self, $0) } ?? [],
            expiresAt: row.optionalDate(8), encryptedSecret: row.bytes(9), status: row.string(10),
            statusReason: row.optionalString(11), createdAt: row.date(12), selector: row.optionalString(13),
            servesBothEnvironments: row.int64(14) != 0, secretDigest: row.optionalString(15))
    }
}
