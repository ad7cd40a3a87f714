import TuisongCore

/// The plugin's own tables. Accounts, devices, app state and badges are the core's
/// (`AccountStore`); these hold what only Tencent IM has. Portable SQL: no SQLite-only
/// functions or types, so the tables can follow the store to PostgreSQL.
enum TencentSchema {
    static let migrations: [PluginMigration] = [
        PluginMigration(
            "v1",
            sql: """
                CREATE TABLE tencent_profile_items (
                    app_id BIGINT NOT NULL,
                    account VARCHAR(64) NOT NULL,
                    tag VARCHAR(128) NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (app_id, account, tag)
                );
                CREATE TABLE tencent_groups (
                    app_id BIGINT NOT NULL,
                    group_id VARCHAR(64) NOT NULL,
                    type VARCHAR(32) NOT NULL,
                    name VARCHAR(128) NOT NULL,
                    owner VARCHAR(64),
                    created_at BIGINT NOT NULL,
                    last_msg_seq BIGINT NOT NULL DEFAULT 0,
                    PRIMARY KEY (app_id, group_id)
                );
                CREATE TABLE tencent_group_members (
                    app_id BIGINT NOT NULL,
                    group_id VARCHAR(64) NOT NULL,
                    account VARCHAR(64) NOT NULL,
                    role VARCHAR(16) NOT NULL,
                    name_card VARCHAR(128),
                    joined_at BIGINT NOT NULL,
                    PRIMARY KEY (app_id, group_id, account)
                );
                CREATE INDEX tencent_group_members_by_account ON tencent_group_members (app_id, account);
                CREATE TABLE tencent_account_tags (
                    app_id BIGINT NOT NULL,
                    account VARCHAR(64) NOT NULL,
                    tag VARCHAR(128) NOT NULL,
                    PRIMARY KEY (app_id, account, tag)
                );
                CREATE INDEX tencent_account_tags_by_tag ON tencent_account_tags (app_id, tag);
                CREATE TABLE tencent_push_config (
                    app_id BIGINT NOT NULL,
                    account VARCHAR(64) NOT NULL,
                    open_push INTEGER NOT NULL,
                    PRIMARY KEY (app_id, account)
                );
                CREATE TABLE tencent_message_badges (
                    message_id BIGINT NOT NULL,
                    account VARCHAR(64) NOT NULL,
                    badge INTEGER NOT NULL,
                    created_at BIGINT NOT NULL,
                    PRIMARY KEY (message_id, account)
                );
                CREATE INDEX tencent_message_badges_by_age ON tencent_message_badges (created_at)
                """),
        // The badges given per message moved to the core (`AccountStore.grantBadges`), which
        // increments and remembers in one transaction.
        PluginMigration(
            "v2-badge-grants-in-core",
            sql: """
                DROP INDEX tencent_message_badges_by_age;
                DROP TABLE tencent_message_badges
                """),
    ]
}
