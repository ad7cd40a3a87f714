import Foundation
import TuisongCore
import TuisongPostgres

extension PostgresSchema {
    /// SQLite's `v11-provider-tokens`: one APNs provider token per (team id, key id).
    static let providerTokens = """
        CREATE TABLE provider_tokens (
            team_id TEXT NOT NULL,
            key_id TEXT NOT NULL,
            token TEXT NOT NULL,
            issued_at BIGINT NOT NULL,
            PRIMARY KEY (team_id, key_id)
        );
        """
}

extension PostgresStore: ProviderTokenStore {
    public func currentProviderToken(teamID: String, keyID: String, newerThan: Date) async throws
        -> SharedProviderToken?
    {
        try await read { conn in
            try conn.run(
                "SELECT token, issued_at FROM provider_tokens WHERE team_id = $1 AND key_id = $2 AND issued_at > $3",
                [.text(teamID), .text(keyID), .int(SQLTime.milliseconds(newerThan))]
            ).rows.first.map { SharedProviderToken(token: $0.string("token"), issuedAt: $0.date("issued_at")) }
        }
    }

    public func offerProviderToken(
        teamID: String, keyID: String, _ token: SharedProviderToken, refreshWindow: TimeInterval, replacing: Date?
    ) async throws -> SharedProviderToken {
        // Concurrent offers serialize on the row (the upsert locks it whether or not it
        // replaces the token, until COMMIT); the read that follows, in the same transaction
        // under READ COMMITTED, sees the token that won.
        try await write { conn in
            try conn.run(
                """
                INSERT INTO provider_tokens (team_id, key_id, token, issued_at) VALUES ($1, $2, $3, $4)
                ON CONFLICT (team_id, key_id) DO UPDATE SET token = excluded.token, issued_at = excluded.issued_at
                WHERE provider_tokens.issued_at < excluded.issued_at - $5 OR provider_tokens.issued_at <= $6
                """,
                [
                    .text(teamID), .text(keyID), .text(token.token), .int(SQLTime.milliseconds(token.issuedAt)),
                    .int(SQLiteStore.milliseconds(refreshWindow)), PostgresValue(replacing.map(SQLTime.milliseconds)),
                ])
            guard
                let row = try conn.run(
                    "SELECT token, issued_at FROM provider_tokens WHERE team_id = $1 AND key_id = $2",
                    [.text(teamID), .text(keyID)]
                ).rows.first
            else { throw StoreError(.unavailable, "the provider token just stored is gone") }
            return SharedProviderToken(token: row.string("token"), issuedAt: row.date("issued_at"))
        }
    }
}
