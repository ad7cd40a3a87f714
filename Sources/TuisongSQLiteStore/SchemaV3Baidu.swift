import TuisongSQLStore

extension Schema {
    /// Released before plugins had migrations of their own, so it stays a core migration:
    /// existing databases recorded it under this name. The Baidu plugin (`Plugins/Baidu`,
    /// `BaiduStore`) owns these tables and columns now and changes them only through its own
    /// `BaiduProvider.migrations`.
    ///
    /// What the Baidu provider needs on top of v1/v2: tag creation times, one device per
    /// Baidu channel, apps found by their Baidu apikey (unique), indexes for timer and topic
    /// lookups, messages kept per user for `fetch_msg`, and bind/unbind events for the
    /// device statistics.
    static let v3Baidu = """
        -- Baidu lists a tag's create_time. Rows inserted without one (DeviceStore.addTag)
        -- get the wall clock from the trigger; rows older than this migration stay NULL.
        ALTER TABLE tags ADD COLUMN created_at INTEGER;
        CREATE TRIGGER tags_created_at AFTER INSERT ON tags FOR EACH ROW
        WHEN NEW.created_at IS NULL
        BEGIN
            UPDATE tags SET created_at = CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER)
            WHERE id = NEW.id;
        END;

        -- A Baidu channel is exactly one device of one app.
        DROP INDEX devices_by_baidu_channel;
        CREATE UNIQUE INDEX devices_by_baidu_channel ON devices(app_id, baidu_channel_id)
            WHERE baidu_channel_id IS NOT NULL;
        CREATE INDEX devices_by_baidu_user ON devices(app_id, baidu_user_id)
            WHERE baidu_user_id IS NOT NULL;

        -- Every Baidu request names its app by apikey; two apps cannot share one. Apps
        -- without Baidu keys index NULL, and NULLs never collide.
        CREATE UNIQUE INDEX apps_by_baidu_apikey ON apps(json_extract(vendor_settings, '$.baidu.apikey'));

        CREATE INDEX messages_by_baidu_timer ON messages(app_id, json_extract(labels, '$.timer_id'))
            WHERE vendor = 'baidu';
        CREATE INDEX messages_by_baidu_topic ON messages(app_id, json_extract(labels, '$.topic_id'))
            WHERE vendor = 'baidu';

        -- Messages pushed to a user, kept until they expire for Channel API 2.0 fetch_msg.
        -- Written before the push is submitted (and dropped if it is refused), so no
        -- reference to messages(id).
        CREATE TABLE baidu_kept_messages (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            msg_id TEXT NOT NULL,
            user_id TEXT NOT NULL,
            channel_id TEXT NOT NULL,
            msg_key TEXT,
            message TEXT NOT NULL,
            message_type INTEGER NOT NULL CHECK (message_type IN (0, 1)),
            expires_at INTEGER NOT NULL,
            created_at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX baidu_kept_by_user ON baidu_kept_messages(app_id, user_id, id);
        CREATE INDEX baidu_kept_by_msg ON baidu_kept_messages(app_id, msg_id);
        CREATE INDEX baidu_kept_by_expiry ON baidu_kept_messages(expires_at);

        -- First binds and unbinds, for report/statistic_device.
        CREATE TABLE baidu_binding_events (
            id INTEGER PRIMARY KEY,
            app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
            kind TEXT NOT NULL CHECK (kind IN ('bind', 'unbind')),
            at INTEGER NOT NULL
        ) STRICT;
        CREATE INDEX baidu_binding_events_by_app ON baidu_binding_events(app_id, at);
        """
}
