import TuisongSQLStore

extension Schema {
    /// A grant is only the fact that a message counted an account, keyed by the account's row:
    /// - Without the value, recording the grants is also the lookup (`INSERT … ON CONFLICT DO
    ///   NOTHING RETURNING` names the accounts not yet counted), one pass instead of two. A page
    ///   decided again (or an account's device on a later page) gets the account's counter as it
    ///   is now: a saved value could be lower than a later message's, and a device that already
    ///   showed the later one would go back.
    /// - By row id (which each bound device carries since v7), the grants and the increments
    ///   are integer-keyed B-tree steps, with no lookup by name: about half the cost per account.
    /// Grants of messages still sending are kept (those of accounts since deleted are dropped).
    static let v6BadgeGrantsByAccountRow = """
        CREATE TABLE badge_grants_v6 (
            message_id INTEGER NOT NULL,
            account_id INTEGER NOT NULL,
            PRIMARY KEY (message_id, account_id)
        ) STRICT, WITHOUT ROWID;
        INSERT OR IGNORE INTO badge_grants_v6 (message_id, account_id)
            SELECT g.message_id, a.id FROM badge_grants g
            JOIN messages m ON m.id = g.message_id
            JOIN accounts a ON a.app_id = m.app_id AND a.account = g.account;
        DROP TABLE badge_grants;
        ALTER TABLE badge_grants_v6 RENAME TO badge_grants;
        """
}
