import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

extension PostgresSchema {
    /// SQLite's `v12-idempotency-keys`: per app, the message an `Idempotency-Key` created.
    static let idempotencyKeys = """
        CREATE TABLE idempotency_keys (
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            key TEXT NOT NULL,
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            created_at BIGINT NOT NULL,
            PRIMARY KEY (app_id, key)
        );
        CREATE INDEX idempotency_keys_by_created_at ON idempotency_keys(created_at);
        CREATE INDEX idempotency_keys_by_message ON idempotency_keys(message_id);
        """
}
