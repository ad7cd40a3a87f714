import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

/// The PostgreSQL schema: the core tables as SQLite's migrations left them, in one baseline
/// (a new PostgreSQL database never replays SQLite's history), then what changed since, then
/// the plugins' migrations (`PluginMigration.postgres`).
///
/// Conventions (as `Schema`'s for SQLite): timestamps are `BIGINT` milliseconds since 1970;
/// enumerations are `TEXT` with a `CHECK`; rows of an app reference `apps(id) ON DELETE
/// CASCADE`; JSON documents are `TEXT` (the store reads and writes them whole; a plugin's JSON
/// path queries cast to `jsonb`). Ids are identity columns. `devices."user"` is quoted: `user`
/// is reserved in PostgreSQL.
enum PostgresSchema {
    /// As SQLite's v19: a credential may serve both APNs environments (the `.p8` keys already
    /// stored do), and a keyed digest per upload, unique per app, finds a repeated upload.
    static let credentialsBothEnvironmentsDigests = SharedMigrationSQL.credentialsBothEnvironmentsDigests

    /// The core migrations, in order. Never edit one that was released: append.
    static let coreMigrations: [(identifier: String, sql: String)] = [
        ("pg1-baseline", baseline),
        ("pg2-work-queue", workQueue),
        ("pg3-console-sessions", PostgresSchema.consoleSessions),
        ("pg4-provider-tokens", PostgresSchema.providerTokens),
        ("pg5-idempotency-keys", PostgresSchema.idempotencyKeys),
        ("pg6-open-slices-in-order", PostgresSchema.openSlicesInOrder),
        ("pg7-push-content", PostgresSchema.pushContent),
        ("pg8-held-deliveries-expire", PostgresSchema.heldDeliveriesExpire),
        ("pg9-open-channels", PostgresSchema.openChannels),
        ("pg10-delivery-receipts", PostgresSchema.deliveryReceipts),
        ("pg11-webhooks", PostgresSchema.webhooks),
        ("pg12-receipt-credentials", PostgresSchema.receiptCredentials),
        ("pg13-credentials-both-environments-digests", PostgresSchema.credentialsBothEnvironmentsDigests),
        ("pg14-receipt-sends", PostgresSchema.receiptSends),
        ("pg15-backlog-by-app", PostgresSchema.backlogByApp),
        ("pg16-delivery-service-message-id", PostgresSchema.deliveryServiceMessageID),
        ("pg17-receipt-inbox", PostgresSchema.receiptInbox),
        ("pg18-uploaded-credentials-are-channel-credentials", PostgresSchema.uploadedCredentialsAreChannelCredentials),
        ("pg19-receipt-service-requests", PostgresSchema.receiptServiceRequests),
        ("pg20-receipt-inbox-statuses-by-app", PostgresSchema.receiptInboxStatusesByApp),
        ("pg21-open-fan-out-slices", PostgresSchema.openFanOutSlices),
        ("pg22-slice-claims-in-place", PostgresSchema.sliceClaimsInPlace),
        ("pg23-badges-counted-in-place", PostgresSchema.badgesCountedInPlace),
        ("pg24-message-documents-unanalyzed", PostgresSchema.messageDocumentsUnanalyzed),
        ("pg25-message-progress-unchecked", PostgresSchema.messageProgressUnchecked),
        ("pg26-scheduled-messages", PostgresSchema.scheduledMessages),
    ]

    /// `messages_pending` listed every message queued or sending as well as scheduled ones, and
    /// only the scheduled ones are looked up by it: the queued and sending are walked on
    /// `messages_backlog_by_app` (by state, then app). Each chat line wrote an entry into it
    /// as it was stored and left a dead one when it completed (issue #47: 3 of a line's pages
    /// at saturation). Now it lists what comes due: scheduled messages by `send_at`.
    static let scheduledMessages = """
        DROP INDEX IF EXISTS messages_pending;
        CREATE INDEX messages_scheduled ON messages(send_at) WHERE state = 'scheduled';
        """

    /// A message's slices and per-service counts are written only by the store, for a message it
    /// just inserted or holds locked, yet each new row had its message checked by a foreign key:
    /// a lookup and a share lock on the message's row, ~4 µs a row on the server (psql: 16.4 →
    /// 12.2 µs a message inserted with its slice), and a chat line writes one of each (issue
    /// #47). Their one use, removing the rows with their message (an app deleted takes its
    /// messages with it), is kept by a trigger: after messages are deleted, by any statement or
    /// cascade, their slices and counts go in the same transaction. (A flush that commits while
    /// its app is being deleted can leave a count row behind, which nothing reads: counts are
    /// read by their message's id, and ids are never reused. With the key, that flush failed.)
    static let messageProgressUnchecked = """
        ALTER TABLE message_slices DROP CONSTRAINT IF EXISTS message_slices_message_id_fkey;
        ALTER TABLE message_channel_deliveries DROP CONSTRAINT IF EXISTS message_channel_deliveries_message_id_fkey;
        CREATE FUNCTION messages_deleted_forget_progress() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            DELETE FROM message_slices WHERE message_id IN (SELECT id FROM gone);
            DELETE FROM message_channel_deliveries WHERE message_id IN (SELECT id FROM gone);
            RETURN NULL;
        END $$;
        CREATE TRIGGER messages_deleted_forget_progress AFTER DELETE ON messages
            REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION messages_deleted_forget_progress();
        """

    /// A message's documents (its audience, content, options, labels and vendor context: JSON
    /// text, hundreds of bytes each) get no planner statistics: no statement compares them as
    /// columns (a plugin's label lookups read a path inside, which column statistics do not
    /// describe), and `ANALYZE` spent half its time on them, sorting every sampled document for
    /// its histogram. The queue's statistics keeper analyzes `messages` each time a chat burst
    /// doubles it (`QueueStatisticsKeeper`): 4–22 µs of the server's time a chat line on a new
    /// database (issue #47, `pg_stat_statements` under `bench/messages.sh`); 91 → 46 ms an
    /// `ANALYZE` of 20,000 messages (psql). Autovacuum's analyses skip them too.
    static let messageDocumentsUnanalyzed = """
        ALTER TABLE messages ALTER COLUMN audience SET STATISTICS 0, ALTER COLUMN content SET STATISTICS 0,
            ALTER COLUMN options SET STATISTICS 0, ALTER COLUMN labels SET STATISTICS 0,
            ALTER COLUMN vendor_context SET STATISTICS 0;
        """

    /// An IM chat line counts its receiver's badge: Tencent's badge grant and Easemob's
    /// increment each rewrite the account's row (`badge`, `updated_at`, columns no index names).
    /// Accounts are imported in bulk, which fills their pages: a count then found no room on the
    /// page and wrote the row's new version elsewhere, with a new entry in both of the table's
    /// indexes (whose uniqueness check then reads past the row's older versions). A Tencent chat
    /// line on PostgreSQL spent ~20 µs of its badge grant's statement on that (issue #47,
    /// auto_explain under `bench/messages.sh`: 9 pages a row for the update, 38 % of the updates
    /// not in place). Pages written from now on keep a fifth of their room for the counts,
    /// rewritten in place (HOT); pages already full stay so until the table is rewritten.
    static let badgesCountedInPlace = """
        ALTER TABLE accounts SET (fillfactor = 80);
        """

    /// A claim, a lease renewal and a flush that is not the last change only columns no index
    /// names (`owner`, `lease_until`, `attempts`, the counters), so PostgreSQL rewrites the row
    /// in place on its page (a HOT update: no new index entries) where room is left on the
    /// page for it. Before, `message_slices_open` indexed `lease_until`: every claim wrote a
    /// new version into every index of the table (three), and the claim's and the completion's
    /// walks read past the old entries until a vacuum — a chat line claimed once and renewed
    /// now and then paid that each time (issue #47). No statement looks slices up by lease:
    /// whole messages are claimed by key, fan-out slices on `message_slices_open_fan_out`; the
    /// planner took `message_slices_open` for the claim's keyed lookup only on statistics from
    /// before a burst, reading every open slice. New pages keep half their room for the updates:
    /// with 30 % free, 45 % of a chat load's claims found room on the page, with half 89 %.
    static let sliceClaimsInPlace = """
        DROP INDEX message_slices_open;
        ALTER TABLE message_slices SET (fillfactor = 50);
        """

    /// The open slices of fan-outs, in claim order: the claim's walk for slices to take over or
    /// start. On `message_slices_open_in_order` it read past every open chat line (a message
    /// sent whole has one slice, 0, with no end position) on each claim — the whole backlog,
    /// ~5 ms a claim at 4,500 queued (issue #47). PostgreSQL only: SQLite has no slices (one
    /// dispatcher sends every message whole).
    static let openFanOutSlices = """
        CREATE INDEX message_slices_open_fan_out ON message_slices(message_id, slice)
            WHERE state = 'open' AND (slice <> 0 OR through_position IS NOT NULL);
        """

    /// SQLite's `v26-receipt-inbox-statuses-by-app`: the inbox's waiting statuses summed per
    /// app from an index.
    static let receiptInboxStatusesByApp = portable(SharedMigrationSQL.receiptInboxStatusesByApp)

    /// SQLite's `v25-receipt-service-requests`: the requests the services that sign their
    /// receipts accepted, by the service's id, one row per request, deleted with the message.
    static let receiptServiceRequests = portable(SharedMigrationSQL.receiptServiceRequests)

    /// SQLite's `v24-uploaded-credentials-are-channel-credentials`: the uploaded file credentials
    /// move into `channel_credentials` (their environment, both environments and expiry in new
    /// columns, their other public fields in `options`), which stops refusing their channel. A
    /// moved row keeps its id plus the largest id the table held (0 when none), and the identity
    /// continues after the last.
    static let uploadedCredentialsAreChannelCredentials = """
        ALTER TABLE channel_credentials DROP CONSTRAINT channel_credentials_channel_check,
            ADD CONSTRAINT channel_credentials_channel_check CHECK (channel ~ '^[a-z][a-z0-9_-]{0,31}$'),
            ADD COLUMN environment TEXT CHECK (environment IN ('sandbox', 'production')),
            ADD COLUMN both_environments INTEGER NOT NULL DEFAULT 0 CHECK (both_environments IN (0, 1)),
            ADD COLUMN expires_at BIGINT;
        WITH before AS (SELECT coalesce(max(id), 0) AS last_id FROM channel_credentials)
        INSERT INTO channel_credentials (id, app_id, channel, selector, vendor_app_id, client_id,
            encrypted_secret, options, status, status_reason, created_at, secret_digest,
            environment, both_environments, expires_at)
        SELECT c.id + before.last_id, c.app_id, 'apns', c.selector,
            coalesce(c.team_id, ''), coalesce(c.key_id, c.subject, ''), c.encrypted_secret,
            json_strip_nulls(json_build_object('kind', c.kind, 'team_id', c.team_id, 'key_id', c.key_id,
                'subject', c.subject, 'topics', c.topic))::text,
            c.status, c.status_reason, c.created_at, c.secret_digest, c.environment, c.both_environments,
            c.expires_at
        FROM credentials c, before ORDER BY c.id;
        SELECT setval(pg_get_serial_sequence('channel_credentials', 'id'),
            greatest(max(id), (SELECT last_value FROM channel_credentials_id_seq)))
        FROM channel_credentials HAVING count(*) > 0;
        DROP TABLE credentials;
        """

    /// SQLite's `v18-receipt-credentials`: callback credentials per app and service (the key
    /// sealed), the apps that existed while they were derived from the master key, and whether
    /// an app posts its own receipts.
    static let receiptCredentials = """
        ALTER TABLE apps ADD COLUMN app_receipts INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE apps ADD COLUMN derived_callback_credentials INTEGER NOT NULL DEFAULT 0;
        UPDATE apps SET derived_callback_credentials = 1;
        CREATE TABLE receipt_callback_credentials (
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            user_name TEXT NOT NULL,
            encrypted_key BYTEA NOT NULL,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (app_id, channel)
        );
        """

    /// SQLite's `v20-receipt-sends`: the requests to many tokens that asked for receipts by one
    /// `param`, with their tokens' digests.
    static let receiptSends = """
        CREATE TABLE receipt_sends (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            channel TEXT NOT NULL,
            token_digests TEXT NOT NULL,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX receipt_sends_message ON receipt_sends(message_id);
        """

    /// SQLite's `v23-receipt-inbox`: receipt POSTs answered and not yet digested, one row each;
    /// any node digests any row, taking it with `FOR UPDATE SKIP LOCKED`.
    static let receiptInbox = """
        CREATE TABLE receipt_inbox (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            channel TEXT NOT NULL,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            received_at BIGINT NOT NULL,
            statuses INTEGER NOT NULL,
            body BYTEA NOT NULL
        );
        CREATE INDEX receipt_inbox_app ON receipt_inbox(app_id);
        """

    /// SQLite's `v21-backlog-by-app`: each app's messages queued or sending, which admission
    /// counts on accepts (`WorkQueue.backlog`) and planning takes fairly across apps.
    static let backlogByApp = """
        CREATE INDEX messages_backlog_by_app ON messages(state, app_id, id) WHERE state IN ('queued', 'sending');
        """

    /// SQLite's `v22-delivery-service-message-id`: the delivery's message id on its push service,
    /// whichever service, under a name that says so (`apns_id` before); values kept.
    static let deliveryServiceMessageID = SharedMigrationSQL.deliveryServiceMessageID

    /// SQLite's `v17-webhooks`: endpoints, the outbox nodes claim rows of under a lease
    /// (`FOR UPDATE SKIP LOCKED`), and recent attempts.
    static let webhooks = portable(SharedMigrationSQL.webhooks)

    /// SQLite's `v15-open-channels`: a channel is a name a transport registry declares, so the
    /// CHECKs keep only its shape (a lower-case name of at most 32 characters) and no longer
    /// list the names; `channel_credentials` still refuses `apns` (APNs credentials live in
    /// `credentials`). The constraint names are PostgreSQL's own for pg1's column CHECKs. Each
    /// table is locked once (ACCESS EXCLUSIVE) while its rows are checked against the new
    /// constraint; `NOT VALID` + `VALIDATE CONSTRAINT` would not shorten that, since every
    /// migration runs in one transaction that holds the lock until COMMIT.
    static let openChannels = """
        ALTER TABLE devices DROP CONSTRAINT devices_channel_check,
            ADD CONSTRAINT devices_channel_check CHECK (channel ~ '^[a-z][a-z0-9_-]{0,31}$');
        ALTER TABLE deliveries DROP CONSTRAINT deliveries_channel_check,
            ADD CONSTRAINT deliveries_channel_check CHECK (channel ~ '^[a-z][a-z0-9_-]{0,31}$');
        ALTER TABLE channel_credentials DROP CONSTRAINT channel_credentials_channel_check,
            ADD CONSTRAINT channel_credentials_channel_check
                CHECK (channel ~ '^[a-z][a-z0-9_-]{0,31}$' AND channel <> 'apns');
        """

    /// SQLite's `v16-delivery-receipts`: receipts per (message, token) and their counts.
    static let deliveryReceipts = portable(SharedMigrationSQL.deliveryReceipts)

    /// Held deliveries wait until their message expires (`next_attempt_at`); the retry worker
    /// finds those whose moment passed through this index (SQLite's v14).
    static let heldDeliveriesExpire = SharedMigrationSQL.heldDeliveriesExpire

    static let baseline = """
        CREATE TABLE apps (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            name TEXT NOT NULL,
            bundle_id TEXT NOT NULL,
            api_key_hash TEXT NOT NULL UNIQUE,
            vendor_settings TEXT NOT NULL DEFAULT '{}',
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL
        );
        CREATE TABLE credentials (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('p8', 'p12', 'pem')),
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            team_id TEXT,
            key_id TEXT,
            subject TEXT,
            topic TEXT,
            expires_at BIGINT,
            encrypted_secret BYTEA NOT NULL,
            status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failing')),
            status_reason TEXT,
            created_at BIGINT NOT NULL,
            selector TEXT
        );
        CREATE INDEX credentials_by_app ON credentials(app_id, environment);
        CREATE TABLE devices (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            "user" TEXT,
            locale TEXT,
            im_account TEXT,
            app_state TEXT CHECK (app_state IN ('foreground', 'background')),
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            invalidated_at BIGINT,
            invalid_reason TEXT,
            credential_selector TEXT,
            account_id BIGINT,
            channel TEXT NOT NULL DEFAULT 'apns'
                CHECK (channel IN ('apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo')),
            UNIQUE (app_id, token)
        );
        CREATE INDEX devices_by_user ON devices(app_id, "user") WHERE "user" IS NOT NULL;
        CREATE INDEX devices_by_im_account ON devices(app_id, im_account) WHERE im_account IS NOT NULL;
        CREATE INDEX devices_bound_by_app ON devices(app_id, id) WHERE im_account IS NOT NULL;
        CREATE INDEX devices_by_app ON devices(app_id, id);
        -- the console's token-prefix search compares byte-wise, as SQLite does
        CREATE INDEX devices_by_token_bytes ON devices(app_id, token COLLATE "C");
        CREATE TABLE tags (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            created_at BIGINT NOT NULL DEFAULT (extract(epoch from clock_timestamp()) * 1000)::bigint,
            UNIQUE (app_id, name)
        );
        CREATE TABLE device_tags (
            tag_id BIGINT NOT NULL REFERENCES tags(id) ON DELETE CASCADE,
            device_id BIGINT NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
            PRIMARY KEY (tag_id, device_id)
        );
        CREATE INDEX device_tags_by_device ON device_tags(device_id);
        CREATE TABLE templates (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            title_pattern TEXT NOT NULL,
            body_pattern TEXT NOT NULL,
            UNIQUE (app_id, name)
        );
        CREATE TABLE push_settings (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            scope TEXT NOT NULL CHECK (scope IN ('user', 'conversation')),
            owner TEXT NOT NULL,
            conversation_id TEXT NOT NULL DEFAULT '',
            mode TEXT,
            dnd_start INTEGER CHECK (dnd_start BETWEEN 0 AND 1439),
            dnd_end INTEGER CHECK (dnd_end BETWEEN 0 AND 1439),
            dnd_until BIGINT,
            display_name TEXT,
            display_style INTEGER,
            language TEXT,
            CHECK ((scope = 'user') = (conversation_id = '')),
            UNIQUE (app_id, owner, scope, conversation_id)
        );
        CREATE TABLE settings (
            key TEXT PRIMARY KEY,
            value TEXT NOT NULL
        );
        CREATE TABLE messages (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            vendor TEXT NOT NULL,
            vendor_message_id TEXT,
            audience TEXT NOT NULL,
            notification TEXT NOT NULL,
            options TEXT NOT NULL,
            payload BYTEA NOT NULL,
            labels TEXT NOT NULL DEFAULT '{}',
            state TEXT NOT NULL CHECK (state IN ('scheduled', 'queued', 'sending', 'completed', 'cancelled')),
            send_at BIGINT,
            created_at BIGINT NOT NULL,
            started_at BIGINT,
            completed_at BIGINT,
            total BIGINT,
            -- the retry rows' counts; each slice keeps its own (message_slices)
            queued BIGINT NOT NULL DEFAULT 0,
            sending BIGINT NOT NULL DEFAULT 0,
            delivered BIGINT NOT NULL DEFAULT 0,
            failed BIGINT NOT NULL DEFAULT 0,
            skipped BIGINT NOT NULL DEFAULT 0,
            held BIGINT NOT NULL DEFAULT 0,
            vendor_context TEXT
        );
        CREATE INDEX messages_by_app ON messages(app_id, id);
        CREATE INDEX messages_pending ON messages(state, send_at) WHERE state IN ('scheduled', 'queued', 'sending');
        CREATE UNIQUE INDEX messages_by_vendor_id ON messages(app_id, vendor, vendor_message_id)
            WHERE vendor_message_id IS NOT NULL;
        CREATE TABLE deliveries (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            -- the slice whose flush wrote the row; retries count there
            slice BIGINT NOT NULL DEFAULT 0,
            device_id BIGINT REFERENCES devices(id) ON DELETE SET NULL,
            token TEXT NOT NULL,
            environment TEXT NOT NULL CHECK (environment IN ('sandbox', 'production')),
            state TEXT NOT NULL CHECK (state IN ('queued', 'sending', 'delivered', 'failed', 'skipped', 'held')),
            reason TEXT,
            apns_id TEXT,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_attempt_at BIGINT,
            updated_at BIGINT NOT NULL,
            payload BYTEA,
            credential_selector TEXT,
            channel TEXT NOT NULL DEFAULT 'apns'
                CHECK (channel IN ('apns', 'fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo')),
            -- the node sending a retry, and until when (a dead node's rows are taken back)
            owner TEXT,
            lease_until BIGINT
        );
        CREATE INDEX deliveries_by_message ON deliveries(message_id, state, id);
        CREATE INDEX deliveries_due ON deliveries(next_attempt_at) WHERE state = 'queued';
        CREATE INDEX deliveries_in_flight ON deliveries(lease_until) WHERE state = 'sending';
        CREATE INDEX deliveries_by_device ON deliveries(device_id) WHERE device_id IS NOT NULL;
        CREATE TABLE accounts (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            account TEXT NOT NULL,
            app_state TEXT CHECK (app_state IN ('foreground', 'background')),
            badge BIGINT NOT NULL DEFAULT 0 CHECK (badge >= 0),
            created_at BIGINT NOT NULL,
            updated_at BIGINT NOT NULL,
            UNIQUE (app_id, account)
        );
        CREATE TABLE badge_grants (
            message_id BIGINT NOT NULL,
            account_id BIGINT NOT NULL,
            PRIMARY KEY (message_id, account_id)
        );
        CREATE TABLE channel_credentials (
            id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
            app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            channel TEXT NOT NULL CHECK (channel IN ('fcm', 'huawei', 'honor', 'xiaomi', 'oppo', 'vivo')),
            selector TEXT,
            vendor_app_id TEXT NOT NULL,
            client_id TEXT NOT NULL,
            encrypted_secret BYTEA NOT NULL,
            options TEXT NOT NULL DEFAULT '{}',
            status TEXT NOT NULL DEFAULT 'ok' CHECK (status IN ('ok', 'failing')),
            status_reason TEXT,
            created_at BIGINT NOT NULL
        );
        CREATE INDEX channel_credentials_by_app ON channel_credentials(app_id, channel);
        """

    /// The open slices in claim order. A claim takes them by message id; with only the primary
    /// key to walk in that order, every claim read past every finished slice of the history
    /// (114 ms a claim after 50,000 chat messages, measured by bench/messages.sh). And the queue
    /// tables vacuumed and analysed after 1 % of their rows changed rather than 20 %: a chat load
    /// moves thousands of messages a second through queued → sending → completed, and until a
    /// vacuum the partial indexes of what is pending still list every row that passed through
    /// (a planning query walked 40,000 dead entries, 19 ms, or the whole table on statistics
    /// from before the burst, 168 ms).
    static let openSlicesInOrder = """
        CREATE INDEX message_slices_open_in_order ON message_slices(message_id, slice) WHERE state = 'open';
        ALTER TABLE messages SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
        ALTER TABLE message_slices SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
        """

    /// Slices, per-slice counters and node heartbeats: the work queue several nodes share.
    static let workQueue = """
        -- A message's audience cut into position ranges (after, through], each sent by one node
        -- at a time: owner and lease_until say who and until when; attempts counts claims and
        -- fences flushes (a flush names the attempt it was claimed under).
        CREATE TABLE message_slices (
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            slice BIGINT NOT NULL,
            after_position BIGINT NOT NULL,
            through_position BIGINT,
            cursor BIGINT NOT NULL,
            state TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'done')),
            owner TEXT,
            lease_until BIGINT,
            attempts BIGINT NOT NULL DEFAULT 0,
            total BIGINT,
            queued BIGINT NOT NULL DEFAULT 0,
            sending BIGINT NOT NULL DEFAULT 0,
            delivered BIGINT NOT NULL DEFAULT 0,
            failed BIGINT NOT NULL DEFAULT 0,
            skipped BIGINT NOT NULL DEFAULT 0,
            held BIGINT NOT NULL DEFAULT 0,
            updated_at BIGINT NOT NULL,
            PRIMARY KEY (message_id, slice)
        );
        CREATE INDEX message_slices_open ON message_slices(lease_until) WHERE state = 'open';
        -- Per-reason counts, per slice (slice 0 also takes the retries' of messages that have
        -- one slice), so concurrent flushes of one message never wait for one row.
        CREATE TABLE message_failures (
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            slice BIGINT NOT NULL DEFAULT 0,
            reason TEXT NOT NULL,
            count BIGINT NOT NULL,
            PRIMARY KEY (message_id, slice, reason)
        );
        CREATE TABLE message_skips (
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            slice BIGINT NOT NULL DEFAULT 0,
            reason TEXT NOT NULL,
            count BIGINT NOT NULL,
            PRIMARY KEY (message_id, slice, reason)
        );
        CREATE TABLE message_channel_deliveries (
            message_id BIGINT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            slice BIGINT NOT NULL DEFAULT 0,
            channel TEXT NOT NULL,
            delivered BIGINT NOT NULL,
            PRIMARY KEY (message_id, slice, channel)
        );
        -- One row per running node, its heartbeat renewed with its leases.
        CREATE TABLE nodes (
            id TEXT PRIMARY KEY,
            started_at BIGINT NOT NULL,
            heartbeat_at BIGINT NOT NULL,
            host TEXT NOT NULL DEFAULT ''
        );
        """

    /// What a plugin migration runs on PostgreSQL; nil: record it without running anything.
    static func postgresSQL(of migration: PluginMigration) -> String? {
        switch migration.postgres {
        case .skip: return nil
        case .sql(let sql): return sql
        case .portable:
            // A migration that must run before a SQLite core migration copies data out of a
            // SQLite-only column: PostgreSQL starts at the end of that history.
            if migration.before != nil { return nil }
            return portable(migration.sql)
        }
    }

    /// SQLite DDL as PostgreSQL takes it: 64-bit integers (SQLite's INTEGER is 64-bit, and
    /// timestamps in milliseconds need it), BYTEA for BLOB, no STRICT or WITHOUT ROWID, no
    /// whole-line `--` comments (they document the SQLite text; PostgreSQL's never carried them).
    /// A column that is `INTEGER PRIMARY KEY` and nothing more is SQLite's rowid, numbered by
    /// the database when an insert leaves it out: PostgreSQL's identity column is the same.
    static func portable(_ sql: String) -> String {
        var text = sql
        for (pattern, replacement) in [
            (#"(?m)^[ \t]*--[^\n]*\n"#, ""),
            (#"(?m)\bINTEGER PRIMARY KEY(?=,|$)"#, "BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY"),
            (#"\bINTEGER\b"#, "BIGINT"), (#"\bBLOB\b"#, "BYTEA"),
            (#"\)\s*STRICT\s*,\s*WITHOUT\s+ROWID"#, ")"), (#"\)\s*WITHOUT\s+ROWID\s*,\s*STRICT"#, ")"),
            (#"\)\s*STRICT"#, ")"), (#"\)\s*WITHOUT\s+ROWID"#, ")"),
        ] {
            text = text.replacingOccurrences(of: pattern, with: replacement, options: [.regularExpression])
        }
        return text
    }

    /// Brings the database up to date: the core migrations, then each plugin's, each in its own
    /// transaction and recorded in `schema_migrations`. Nodes starting together take turns on
    /// an advisory lock, so each migration runs once.
    /// `through`: stop after that core migration, as an older binary would (tests of a later one).
    static func migrate(_ connection: PostgresConnection, plugins: [PluginSchema], through last: String? = nil) throws {
        var core = coreMigrations
        if let last, let end = core.firstIndex(where: { $0.identifier == last }) {
            core = Array(core[...end])
        }
        var steps: [(identifier: String, sql: String?)] = core.map { ($0.identifier, $0.sql) }
        let identifiers = try PluginSchema.recordedIdentifiers(plugins, core: core.map(\.identifier))
        for (plugin, recorded) in zip(plugins, identifiers) {
            for (migration, identifier) in zip(plugin.migrations, recorded) {
                steps.append((identifier, postgresSQL(of: migration)))
            }
        }
        try connection.transaction { conn in
            // One key for "the schema of this database"; released at COMMIT.
            try conn.execute("SELECT pg_advisory_xact_lock(7307191002)")
            // Created under the lock: two nodes creating it at once would collide.
            try conn.execute(
                """
                CREATE TABLE IF NOT EXISTS schema_migrations (
                    identifier TEXT PRIMARY KEY,
                    applied_at BIGINT NOT NULL DEFAULT (extract(epoch from clock_timestamp()) * 1000)::bigint
                )
                """)
            let applied = Set(
                try conn.execute("SELECT identifier FROM schema_migrations").rows.compactMap { $0[0].string })
            for step in steps where !applied.contains(step.identifier) {
                if let sql = step.sql, !sql.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty {
                    try conn.execute(sql)
                }
                try conn.execute("INSERT INTO schema_migrations (identifier) VALUES ($1)", [.text(step.identifier)])
            }
        }
    }

    /// Every migration this binary knows, in order, as `schema_migrations` records them.
    static func migrationNames(plugins: [PluginSchema]) -> [String] {
        coreMigrations.map(\.identifier)
            + plugins.flatMap { plugin in plugin.migrations.map { "\(plugin.name):\($0.identifier)" } }
    }
}
