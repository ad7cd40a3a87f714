import Foundation
import GRDB
import TuisongCore

extension SQLiteStore: SettingsStore {
    public func setting(_ key: String) async throws -> String? {
        try await read { db in
            try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key])
        }
    }

    public func setSetting(_ key: String, value: String) async throws {
        try await write { db in
            try db.execute(
                sql:
                    "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                arguments: [key, value])
        }
    }

    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool {
        try await write { db in
            try db.execute(
                sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
                arguments: [key, value])
            return db.changesCount > 0
        }
    }
}

extension SQLiteStore: CredentialStore {
    private static let credentialColumns = """
        id, app_id, kind, environment, team_id, key_id, subject, topic, expires_at, encrypted_secret, \
        status, status_reason, created_at, selector
        """

    public func addCredential(_ credential: NewCredential) async throws -> CredentialRecord {
        let topics = try JSONText.encode(credential.topics)
        let now = nowMilliseconds
        let id: Int64 = try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO credentials (app_id, kind, environment, team_id, key_id, subject, topic, expires_at,
                        encrypted_secret, created_at, selector)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                arguments: [
                    credential.appID, credential.kind.rawValue, credential.environment.rawValue, credential.teamID,
                    credential.keyID, credential.subject, topics, credential.expiresAt.map(SQLTime.milliseconds),
                    Data(credential.encryptedSecret), now, credential.selector,
                ])
            return db.lastInsertedRowID
        }
        guard let record = try await self.credential(id: id) else { throw StoreError.notFound("credential \(id)") }
        return record
    }

    public func credentials(appID: Int64) async throws -> [CredentialRecord] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.credentialColumns) FROM credentials WHERE app_id = ? ORDER BY id",
                arguments: [appID]
            ).map(Self.credentialRecord)
        }
    }

    public func activeCredential(appID: Int64, environment: APNsEnvironment) async throws -> CredentialRecord? {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT \(Self.credentialColumns) FROM credentials
                    WHERE app_id = ? AND environment = ? AND selector IS NULL
                    ORDER BY id DESC LIMIT 1
                    """,
                arguments: [appID, environment.rawValue]
            ).map(Self.credentialRecord)
        }
    }

    public func credential(id: Int64) async throws -> CredentialRecord? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.credentialColumns) FROM credentials WHERE id = ?", arguments: [id]
            ).map(Self.credentialRecord)
        }
    }

    public func deleteCredential(id: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM credentials WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    public func setCredentialStatus(id: Int64, status: String, reason: String?) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE credentials SET status = ?, status_reason = ? WHERE id = ?",
                arguments: [status, reason, id])
        }
    }

    private static func credentialRecord(_ row: Row) throws -> CredentialRecord {
        let kindName: String = row[2]
        let environmentName: String = row[3]
        guard let kind = CredentialKind(rawValue: kindName),
            let environment = APNsEnvironment(rawValue: environmentName)
        else { throw StoreError(.unavailable, "credentials row \(row[0] as Int64) holds unknown values") }
        let topicsText: String? = row[7]
        let expires: Int64? = row[8]
        let secret: Data = row[9]
        return CredentialRecord(
            id: row[0], appID: row[1], kind: kind, environment: environment, teamID: row[4], keyID: row[5],
            subject: row[6], topics: try topicsText.map { try JSONText.decode([String].self, $0) } ?? [],
            expiresAt: expires.map(SQLTime.date), encryptedSecret: Array(secret), status: row[10],
            statusReason: row[11], createdAt: SQLTime.date(row[12]), selector: row[13])
    }
}
