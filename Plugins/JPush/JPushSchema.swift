import TuisongCore

/// The plugin's own tables. Devices and tags are the core's; JPush adds what only it has: the
/// `registration_id` an app server knows a device by, with the device's alias and mobile
/// number; the badge JPush keeps per device; and the timed pushes of JPush's schedule API. Portable SQL, so the tables follow the
/// store to PostgreSQL.
enum JPushSchema {
    static let migrations: [PluginMigration] = [
        PluginMigration(
            "v1",
            sql: """
                CREATE TABLE jpush_registrations (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    registration_id TEXT NOT NULL,
                    device_id INTEGER NOT NULL UNIQUE REFERENCES devices(id) ON DELETE CASCADE,
                    alias TEXT,
                    mobile TEXT,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, registration_id)
                );
                CREATE INDEX jpush_registrations_by_alias ON jpush_registrations(app_id, alias)
                    WHERE alias IS NOT NULL;
                CREATE TABLE jpush_schedules (
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    schedule_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    enabled INTEGER NOT NULL,
                    -- the schedule's trigger and push objects as the app server sent them
                    trigger_json TEXT NOT NULL,
                    push_json TEXT NOT NULL,
                    -- the scheduled Tuisong message (send_at = the trigger's time) while enabled
                    message_id INTEGER,
                    created_at INTEGER NOT NULL,
                    PRIMARY KEY (app_id, schedule_id)
                )
                """),
        // The badge JPush keeps per device (`JPushBadge`): what the app last reported or a push
        // last gave it, and the message that gave it (so that a page decided again is not
        // counted twice).
        PluginMigration(
            "v2-badges",
            sql: """
                CREATE TABLE jpush_badges (
                    device_id INTEGER PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
                    badge INTEGER NOT NULL,
                    message_id INTEGER
                )
                """),
        // A periodical schedule is many scheduled messages: the schedule's messages move to a
        // table of their own (a single schedule's one message with them).
        PluginMigration(
            "v3-schedule-messages",
            sql: """
                CREATE TABLE jpush_schedule_messages (
                    app_id INTEGER NOT NULL,
                    schedule_id TEXT NOT NULL,
                    message_id INTEGER NOT NULL,
                    PRIMARY KEY (app_id, schedule_id, message_id),
                    FOREIGN KEY (app_id, schedule_id) REFERENCES jpush_schedules (app_id, schedule_id)
                        ON DELETE CASCADE
                );
                INSERT INTO jpush_schedule_messages (app_id, schedule_id, message_id)
                    SELECT app_id, schedule_id, message_id FROM jpush_schedules WHERE message_id IS NOT NULL;
                ALTER TABLE jpush_schedules DROP COLUMN message_id
                """),
    ]
}
