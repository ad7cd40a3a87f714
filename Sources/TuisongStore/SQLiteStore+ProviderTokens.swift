import Foundation
import GRDB
import TuisongCore

extension SQLiteStore: ProviderTokenStore {
    public func currentProviderToken(teamID: String, keyID: String, newerThan: Date) async throws
        -> SharedProviderToken?
    {
        try await read { db in
            try Row.fetchOne(
                db,
                sql: "SELECT token, issued_at FROM provider_tokens WHERE team_id = ? AND key_id = ? AND issued_at > ?",
                arguments: [teamID, keyID, SQLTime.milliseconds(newerThan)]
            ).map { SharedProviderToken(token: $0["token"], issuedAt: SQLTime.date($0["issued_at"])) }
        }
    }

    public func offerProviderToken(
        teamID: String, keyID: String, _ token: SharedProviderToken, refreshWindow: TimeInterval, replacing: Date?
    ) async throws -> SharedProviderToken {
        try await write { db in
            try db.execute(
                sql: """
                    INSERT INTO provider_tokens (team_id, key_id, token, issued_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (team_id, key_id) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at
                    WHERE provider_tokens.issued_at < excluded.issued_at - ? OR provider_tokens.issued_at <= ?
                    """,
                arguments: [
                    teamID, keyID, token.token, SQLTime.milliseconds(token.issuedAt), Self.milliseconds(refreshWindow),
                    replacing.map(SQLTime.milliseconds),
                ])
            guard
                let row = try Row.fetchOne(
                    db, sql: "SELECT token, issued_at FROM provider_tokens WHERE team_id = ? AND key_id = ?",
                    arguments: [teamID, keyID])
            else { throw StoreError(.unavailable, "the provider token just stored is gone") }
            return SharedProviderToken(token: row["token"], issuedAt: SQLTime.date(row["issued_at"]))
        }
    }
}
