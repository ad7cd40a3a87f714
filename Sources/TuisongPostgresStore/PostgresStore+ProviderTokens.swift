import Foundation
import TuisongSQLStore

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
