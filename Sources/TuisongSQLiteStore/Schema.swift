import GRDB
import TuisongCore
import TuisongSQLStore

/// The database schema, as an ordered list of named migrations.
///
/// Conventions every migration follows (later migrations too):
/// - Tables are `STRICT`: a value of the wrong type is an error instead of being silently
///   stored (SQLite's default affinity would accept a date string in an integer column).
/// - Every timestamp is an `INTEGER` of **milliseconds since 1970-01-01 UTC** (see
///   `Milliseconds`). Integers compare and index cheaply and round-trip exactly; a REAL of
///   seconds would not.
/// - Enumerations are `TEXT` guarded by a `CHECK`, so a row written by an older or newer
///   binary cannot hold a value this one does not understand without failing loudly. A
///   channel is not: transports declare channels (their registry decides which names exist),
///   so its `CHECK` is on the name's shape only (v15).
/// - Rows belonging to an app reference `apps(id) ON DELETE CASCADE`: deleting an app deletes
///   everything it owns in one statement.
/// - A migration is never edited once released; changes go into a new `vN-…` migration
///   appended to `migrator`.
enum Schema {
    /// The core migrations, in order: identifier and what it runs (most run SQL, `sql(_:)`).
    static let coreMigrations: [(identifier: String, migrate: @Sendable (Database) throws -> Void)] = [
        ("v1-apps-credentials-devices-tags-templates-settings", sql(v1)),
        ("v2-settings-messages-deliveries", sql(v2)),
        ("v3-baidu-bindings-tags-kept-messages", sql(v3Baidu)),
        ("v4-accounts-selectors-vendor-context-device-payloads", sql(v4Accounts)),
        ("v5-badge-grants", sql(v5BadgeGrants)),
        ("v6-badge-grants-by-account-row", sql(v6BadgeGrantsByAccountRow)),
        ("v7-devices-carry-their-account", sql(v7DevicesCarryTheirAccount)),
        (v8Identifier, sql(v8VendorColumnsLeaveTheCore)),
        (v9Identifier, sql(v9Channels)),
        (v10Identifier, sql(v10ConsoleSessions)),
        (v11Identifier, sql(v11ProviderTokens)),
        (v12Identifier, sql(v12IdempotencyKeys)),
        (v13Identifier, sql(v13PushContent)),
        (v14Identifier, sql(v14HeldDeliveriesExpire)),
        (v15Identifier, v15OpenChannels),
        (v16Identifier, sql(v16DeliveryReceipts)),
        (v17Identifier, sql(v17Webhooks)),
        (v18Identifier, sql(v18ReceiptCredentials)),
        (v19Identifier, sql(v19CredentialsBothEnvironmentsDigests)),
        (v20Identifier, sql(v20ReceiptSends)),
        (v21Identifier, sql(v21BacklogByApp)),
        (v22Identifier, sql(v22DeliveryServiceMessageID)),
        (v23Identifier, sql(v23ReceiptInbox)),
        (v24Identifier, sql(v24UploadedCredentialsAreChannelCredentials)),
        (v25Identifier, sql(v25ReceiptServiceRequests)),
        (v26Identifier, sql(v26ReceiptInboxStatusesByApp)),
        (v27Identifier, v27StateConditionsWithoutInLists),
    ]

    /// A migration that runs `text`.
    static func sql(_ text: String) -> @Sendable (Database) throws -> Void {
        { db in try db.execute(sql: text) }
    }

    /// The core migrations alone.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        for (identifier, migrate) in coreMigrations {
            migrator.registerMigration(identifier, migrate: migrate)
        }
        return migrator
    }()

    /// The core migrations, then each plugin's in the order given, as `<plugin>:<identifier>`.
    /// Plugins come after every core migration, so a core migration added later still runs
    /// before them on a new database; on an existing one GRDB applies whatever is missing,
    /// in this order. A plugin migration naming a core migration in `before` runs just before
    /// it, with the plugin's migrations declared ahead of it (see `PluginMigration`). Throws
    /// for a name or identifier that is empty, contains `:`, or repeats, and for a `before`
    /// that names no core migration.
    static func migrator(plugins: [SQLiteStore.PluginSchema]) throws -> DatabaseMigrator {
        let core = coreMigrations.map(\.identifier)
        let identifiers = try PluginSchema.recordedIdentifiers(plugins, core: core)
        for (plugin, recorded) in zip(plugins, identifiers) {
            for (migration, identifier) in zip(plugin.migrations, recorded) {
                if let before = migration.before, !core.contains(before) {
                    throw StoreError(
                        .conflict, "plugin migration \"\(identifier)\" names no core migration \"\(before)\"")
                }
            }
        }
        var migrator = DatabaseMigrator()
        // How many of each plugin's migrations are registered so far.
        var registered = Array(repeating: 0, count: plugins.count)
        func registerPlugins(through end: (SQLiteStore.PluginSchema) -> Int) {
            for (index, plugin) in plugins.enumerated() where registered[index] < end(plugin) {
                for migration in plugin.migrations[registered[index]..<end(plugin)] {
                    let sql = migration.sql
                    let before = migration.before
                    migrator.registerMigration("\(plugin.name):\(migration.identifier)") { db in
                        if let before,
                            try Bool.fetchOne(
                                db, sql: "SELECT EXISTS (SELECT 1 FROM grdb_migrations WHERE identifier = ?)",
                                arguments: [before]) == true
                        {
                            return  // what it would copy is gone already
                        }
                        try db.execute(sql: sql)
                    }
                }
                registered[index] = end(plugin)
            }
        }
        for (identifier, migrate) in coreMigrations {
            // Each plugin's migrations up to the last one that must precede this core migration.
            registerPlugins { plugin in
                (plugin.migrations.lastIndex { $0.before == identifier }).map { $0 + 1 } ?? 0
            }
            migrator.registerMigration(identifier, migrate: migrate)
        }
        registerPlugins { $0.migrations.count }
        return migrator
    }

    /// `messages` and `deliveries` arrive in a later migration.
    static let v1 = """
        CREATE TABLE apps (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            api_key_hash TEXT NOT NULL UNIQUE,
            -- {"baidu": {"apikey": "…", …}, "tencent": {…}, "easemob": {…}}; secret values
            -- are encrypted by the gateway before they get here.
            vendor_settings TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(vendor_settings)),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL
        ) STRICT;

        CREATE TABLE credentials (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('p8', 'p12', 'pem')),
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            team_id TEXT,
            key_id TEXT,
            -- certificate subject and topic, for p12/pem
            subject TEXT,
            topic TEXT,
            expires_at INTEGER,
            -- AES-256-GCM sealed p8 key or p12 + password, encrypted by the gateway
            encrypted_secret BLOB NOT NULL,
            status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failing')),
            status_reason TEXT,
            tencent_busi_id TEXT,
            easemob_cert_name TEXT,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX credentials_by_app ON credentials(app_id, environment);

        CREATE TABLE devices (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            -- lower-case hex, as DeviceToken normalises it
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            user TEXT,
            locale TEXT,
            baidu_user_id TEXT,
            baidu_channel_id TEXT,
            im_account TEXT,
            -- whether the app last reported itself in the foreground (Tencent and Easemob
            -- skip offline push for online clients); NULL when never reported
            app_state TEXT CHECK (app_state IN ('foreground', 'background')),
            unread_count INTEGER NOT NULL DEFAULT 0 CHECK (unread_count >= 0),
            created_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            invalidated_at INTEGER,
            invalid_reason TEXT,
            UNIQUE (app_id, token)
        ) STRICT;
        -- Partial indexes: most devices have no Baidu channel or IM account, and a row that
        -- is not in an index costs nothing to write. `x = ?` implies `x IS NOT NULL`, so
        -- SQLite still uses them for equality lookups.
        CREATE INDEX devices_by_user ON devices(app_id, user) WHERE user IS NOT NULL;
        CREATE INDEX devices_by_baidu_channel ON devices(app_id, baidu_channel_id)
            WHERE baidu_channel_id IS NOT NULL;
        CREATE INDEX devices_by_im_account ON devices(app_id, im_account)
            WHERE im_account IS NOT NULL;

        CREATE TABLE tags (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            UNIQUE (app_id, name)
        ) STRICT;

        -- Keyed by tag first: listing a tag's devices in id order is one range scan.
        CREATE TABLE device_tags (
            tag_id INTEGER NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
            device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
            PRIMARY KEY (tag_id, device_id)
        ) STRICT, WITHOUT ROWID;
        CREATE INDEX device_tags_by_device ON device_tags(device_id);

        CREATE TABLE templates (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            title_pattern TEXT NOT NULL,
            body_pattern TEXT NOT NULL,
            UNIQUE (app_id, name)
        ) STRICT;

        -- Do-not-disturb and display rules of one IM user (scope 'user', conversation_id '')
        -- or of one user in one conversation (scope 'conversation'). conversation_id is ''
        -- rather than NULL for the user scope so that UNIQUE holds (NULLs are all distinct).
        CREATE TABLE push_settings (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            scope TEXT NOT NULL CHECK (scope IN ('user', 'conversation')),
            owner TEXT NOT NULL,
            conversation_id TEXT NOT NULL DEFAULT '',
            -- provider-defined receive mode (e.g. all, mention, none)
            mode TEXT,
            -- daily quiet interval in minutes after local midnight, 0…1439
            dnd_start INTEGER CHECK (dnd_start BETWEEN 0 AND 1439),
            dnd_end INTEGER CHECK (dnd_end BETWEEN 0 AND 1439),
            -- quiet until this instant
            dnd_until INTEGER,
            display_name TEXT,
            display_style INTEGER,
            language TEXT,
            CHECK ((scope = 'user') = (conversation_id = '')),
            UNIQUE (app_id, owner, scope, conversation_id)
        ) STRICT;
        """
}
