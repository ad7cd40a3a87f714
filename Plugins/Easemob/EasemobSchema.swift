import TuisongCore

/// The Easemob provider's tables, on the gateway's database. Portable SQL (no SQLite-only
/// functions or conflict clauses): `ON CONFLICT … DO` is understood by SQLite and PostgreSQL.
/// Times are epoch milliseconds, as Easemob writes them. Usernames are stored lower-cased.
/// Every row belongs to an app and goes with it.
enum EasemobSchema {
    static let migrations: [PluginMigration] = [
        PluginMigration(
            "v1",
            sql: """
                CREATE TABLE easemob_token_keys (
                    app_id INTEGER PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
                    -- 32 random bytes, sealed under the master key (context easemob:token-key:<app>)
                    sealed_key TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                CREATE TABLE easemob_users (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    username TEXT NOT NULL,
                    uuid TEXT NOT NULL,
                    -- PBKDF2 (TuisongCrypto.PasswordHash), NULL = registered without a password
                    password_hash TEXT,
                    nickname TEXT,
                    display_style INTEGER,
                    no_disturbing INTEGER,
                    no_disturbing_start INTEGER,
                    no_disturbing_end INTEGER,
                    language TEXT,
                    created_at INTEGER NOT NULL,
                    modified_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, username)
                );
                CREATE INDEX easemob_users_created ON easemob_users (app_id, created_at, username);
                CREATE TABLE easemob_notification_settings (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    username TEXT NOT NULL,
                    -- 'user' (key = the peer, or the user itself for the app level) or 'chatgroup'
                    chat_type TEXT NOT NULL,
                    target TEXT NOT NULL,
                    mode TEXT NOT NULL,
                    ignore_interval TEXT,
                    ignore_until INTEGER,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, username, chat_type, target)
                );
                CREATE TABLE easemob_groups (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    group_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    description TEXT NOT NULL,
                    is_public INTEGER NOT NULL,
                    members_only INTEGER NOT NULL,
                    allow_invites INTEGER NOT NULL,
                    max_users INTEGER NOT NULL,
                    owner TEXT NOT NULL,
                    custom TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, group_id)
                );
                CREATE TABLE easemob_group_members (
                    app_id INTEGER NOT NULL,
                    group_id TEXT NOT NULL,
                    username TEXT NOT NULL,
                    -- 'owner' or 'member'
                    role TEXT NOT NULL,
                    joined_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, group_id, username),
                    FOREIGN KEY (app_id, group_id) REFERENCES easemob_groups (app_id, group_id) ON DELETE CASCADE
                );
                CREATE INDEX easemob_group_members_user ON easemob_group_members (app_id, username);
                CREATE TABLE easemob_bindings (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    username TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    device_token TEXT NOT NULL,
                    notifier_name TEXT NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, username, device_id)
                );
                CREATE INDEX easemob_bindings_token ON easemob_bindings (app_id, device_token);
                -- Easemob answers createAt/updateAt for templates, but the templates themselves are
                -- the app's core templates (the console edits them too), which keep no times.
                -- A stamp remembers when this provider first saw a template's content and when
                -- it last saw it change.
                CREATE TABLE easemob_template_stamps (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    template_id INTEGER NOT NULL,
                    content_hash TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    updated_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, template_id)
                )
                """),
        // Tokens issued by release e167280 and earlier are bound to the client secret's value
        // (`EasemobToken.legacyAppBinding`); later ones to its rotation, its sealed form. The
        // sealed form each app has when this runs is the rotation those tokens were issued
        // under: they are accepted while the app's secret still has it, and never again once
        // the secret is set to another value (an old value set again is sealed anew).
        PluginMigration(
            "v2-legacy-token-secrets",
            sql: """
                CREATE TABLE easemob_legacy_token_secrets (
                    app_id INTEGER PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
                    client_secret_sealed TEXT NOT NULL
                );
                INSERT INTO easemob_legacy_token_secrets (app_id, client_secret_sealed)
                SELECT id, json_extract(vendor_settings, '$.easemob.client_secret_sealed') FROM apps
                WHERE json_extract(vendor_settings, '$.easemob.client_secret_sealed') IS NOT NULL
                """,
            postgres: .sql(
                """
                CREATE TABLE easemob_legacy_token_secrets (
                    app_id BIGINT PRIMARY KEY REFERENCES apps(id) ON DELETE CASCADE,
                    client_secret_sealed TEXT NOT NULL
                );
                INSERT INTO easemob_legacy_token_secrets (app_id, client_secret_sealed)
                SELECT id, vendor_settings::jsonb -> 'easemob' ->> 'client_secret_sealed' FROM apps
                WHERE vendor_settings::jsonb -> 'easemob' ->> 'client_secret_sealed' IS NOT NULL
                """)),
    ]
}
