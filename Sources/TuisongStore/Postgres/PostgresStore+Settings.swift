import Foundation
import TuisongCore
import TuisongPostgres

// SettingsStore and CredentialStore (APNs credentials); SQLiteStore+Settings.swift is the contract.
extension PostgresStore {
    public func setting(_ key: String) async throws -> String? {
        try await read { conn in
            try conn.run("SELECT value FROM settings WHERE key = $1", [.text(key)]).rows.first?[0].string
        }
    }

    public func setSetting(_ key: String, value: String) async throws {
        try await writeStatement { conn in
            try conn.run(
                "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                [.text(key), .text(value)])
        }
    }

    /// `true` when the setting was stored, `false` when the key already had a value (kept).
    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool {
        try await writeStatement { conn in
            (try conn.run(
                "INSERT INTO settings (key, value) VALUES ($1, $2) ON CONFLICT (key) DO NOTHING",
                [.text(key), .text(value)]
            ).affectedRows ?? 0) > 0
        }
    }

    static let credentialColumns = """
        id, app_id, kind, environment, team_id, key_id, subject, topic, expires_at, encrypted_secret, \
        status, status_reason, created_at, selector
        """

    /// Throws `.notFound` for an unknown app.
    public func addCredential(_ credential: NewCredential) async throws -> CredentialRecord {
        let topics = try JSONText.encode(credential.topics)
        let now = nowMilliseconds
        return try await writeStatement { conn in
            let rows = try conn.run(
                """
                INSERT INTO credentials (app_id, kind, environment, team_id, key_id, subject, topic, expires_at,
                    encrypted_secret, created_at, selector)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
                RETURNING \(Self.credentialColumns)
                """,
                [
                    .int(credential.appID), .text(credential.kind.rawValue), .text(credential.environment.rawValue),
                    PostgresValue(credential.teamID), PostgresValue(credential.keyID),
                    PostgresValue(credential.subject), .text(topics),
                    PostgresValue(credential.expiresAt.map(SQLTime.milliseconds)), .bytes(credential.encryptedSecret),
                    .int(now), PostgresValue(credential.selector),
                ]
            ).rows
            guard let row = rows.first else {
                throw StoreError(.unavailable, "INSERT INTO credentials returned no row")
            }
            return try Self.credentialRecord(row)
        }
    }

    public func credentials(appID: Int64) async throws -> [CredentialRecord] {
        try await read { conn in
            try conn.run(
                "SELECT \(Self.credentialColumns) FROM credentials WHERE app_id = $1 ORDER BY id", [.int(appID)]
            ).rows.map(Self.credentialRecord)
        }
    }

    /// The app's newest credential without a selector in `environment`.
    public func activeCredential(appID: Int64, environment: APNsEnvironment) async throws -> CredentialRecord? {
        try await read { conn in
            try conn.run(
                """
                SELECT \(Self.credentialColumns) FROM credentials
                WHERE app_id = $1 AND environment = $2 AND selector IS NULL
                ORDER BY id DESC LIMIT 1
                """,
                [.int(appID), .text(environment.rawValue)]
            ).rows.first.map(Self.credentialRecord)
        }
    }

    public func credential(id: Int64) async throws -> CredentialRecord? {
        try await read { conn in
            try conn.run("SELECT \(Self.credentialColumns) FROM credentials WHERE id = $1", [.int(id)]).rows.first
                .map(Self.credentialRecord)
        }
    }

    public func deleteCredential(id: Int64) async throws -> Bool {
        try await writeStatement { conn in
            (try conn.run("DELETE FROM credentials WHERE id = $1", [.int(id)]).affectedRows ?? 0) > 0
        }
    }

    /// `.conflict` for a status the schema refuses; an unknown id changes nothing.
    public func setCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        try await writeStatement { conn in
            try conn.run(
                "UPDATE credentials SET status = $1, status_reason = $2 WHERE id = $3",
                [.text(status), PostgresValue(reason), .int(id)])
        }
    }

    private static func credentialRecord(_ row: PostgresRow) throws -> CredentialRecord {
        let id = row[0].int64 ?? 0
        guard let kind = CredentialKind(rawValue: row[2].string ?? ""),
            let environment = APNsEnvironment(rawValue: row[3].string ?? ""),
            let secret = row[9].bytes
        else { throw StoreError(.unavailable, "credentials row \(id) holds unknown values") }
        return CredentialRecord(
            id: id, appID: row[1].int64 ?? 0, kind: kind, environment: environment, teamID: row[4].string,
            keyID: row[5].string, subject: row[6].string,
            topics: try row[7].string.map { try JSONText.decode([String].self, $0) } ?? [],
            expiresAt: row[8].int64.map(SQLTime.date), encryptedSecret: secret, status: row[10].string ?? "",
            statusReason: row[11].string, createdAt: SQLTime.date(row[12].int64 ?? 0), selector: row[13].string)
    }
}
