import Foundation
import TuisongCore

// ProviderTokenStore, written once: one shared provider token per (team id, key id).
extension SQLStoreBackend {
    public func currentProviderToken(teamID: String, keyID: String, newerThan: Date) async throws
        -> SharedProviderToken?
    {
        try await sqlRead { db in
            try db.fetchOne(
                """
                SELECT token, issued_at FROM provider_tokens
                WHERE team_id = \(teamID) AND key_id = \(keyID) AND issued_at > \(SQLTime.milliseconds(newerThan))
                """
            ).map { SharedProviderToken(token: $0.string(0), issuedAt: $0.date(1)) }
        }
    }

    public func offerProviderToken(
        teamID: String, keyID: String, _ token: SharedProviderToken, refreshWindow: TimeInterval, replacing: Date?
    ) async throws -> SharedProviderToken {
        // Concurrent offers serialize on the row (SQLite: the one writer; PostgreSQL: the upsert
        // locks it whether or not it replaces the token, until COMMIT); the read that follows,
        // in the same transaction, sees the token that won.
        try await sqlWrite { db in
            try db.run(
                """
                INSERT INTO provider_tokens (team_id, key_id, token, issued_at)
                VALUES (\(teamID), \(keyID), \(token.token), \(SQLTime.milliseconds(token.issuedAt)))
                ON CONFLICT (team_id, key_id) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at
                WHERE provider_tokens.issued_at < excluded.issued_at - \(SQLDuration.milliseconds(refreshWindow))
                    OR provider_tokens.issued_at <= \(replacing.map(SQLTime.milliseconds))
                """)
            guard
                let row = try db.fetchOne(
                    "SELECT token, issued_at FROM provider_tokens WHERE team_id = \(teamID) AND key_id = \(keyID)")
            else { throw StoreError(.unavailable, "the provider token just stored is gone") }
            return SharedProviderToken(token: row.string(0), issuedAt: row.date(1))
        }
    }
}
