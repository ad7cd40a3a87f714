import TuisongSQLStore

extension Schema {
    /// The badge each account was given for a message (`AccountStore.grantBadges`), kept while
    /// the message is sending so a page decided again gets the same values. Keyed by message
    /// first: a page's lookups and inserts fall on the same few leaf pages, and forgetting a
    /// finished message is one key range. No foreign key: the rows are deleted explicitly when
    /// the message finishes (`forgetFinishedBadgeGrants`), and a check per inserted row would
    /// cost as much as the row.
    static let v5BadgeGrants = """
        CREATE TABLE badge_grants (
            message_id INTEGER NOT NULL,
            account TEXT NOT NULL,
            badge INTEGER NOT NULL CHECK (badge >= 0),
            PRIMARY KEY (message_id, account)
        ) STRICT, WITHOUT ROWID;
        """
}
