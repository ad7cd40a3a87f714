import TuisongSQLStore

extension Schema {
    static let v8Identifier = "v8-vendor-columns-leave-the-core"

    /// The core keeps no column of one vendor: the bind identifiers of v1 (`devices.baidu_*`)
    /// move to that provider's own table, and what no code ever used goes (the credentials'
    /// per-vendor selectors of v1, replaced by `credentials.selector` in v4, and
    /// `devices.unread_count`, replaced by the account's badge in v4).
    ///
    /// The provider copies its columns first: its migration names this one in
    /// `PluginMigration.before`, so it runs just before it (see `migrator(plugins:)`). The
    /// columns' indexes go first: SQLite refuses to drop an indexed column.
    static let v8VendorColumnsLeaveTheCore = """
        DROP INDEX IF EXISTS devices_by_baidu_channel;
        DROP INDEX IF EXISTS devices_by_baidu_user;
        ALTER TABLE devices DROP COLUMN baidu_user_id;
        ALTER TABLE devices DROP COLUMN baidu_channel_id;
        ALTER TABLE devices DROP COLUMN unread_count;
        ALTER TABLE credentials DROP COLUMN tencent_busi_id;
        ALTER TABLE credentials DROP COLUMN easemob_cert_name;
        """
}
