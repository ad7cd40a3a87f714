extension Schema {
    /// A grant is only the fact that the account was counted for the message: a page decided
    /// again (or an account's device on a later page) gets the account's current counter,
    /// not the value it had when the grant was made. The current counter is what the device
    /// should show: a saved value would be lower than a later message's, and a device that
    /// already showed the later one would go back. Without the value, recording the grants is
    /// also the lookup (`INSERT … ON CONFLICT DO NOTHING RETURNING` names the accounts not yet
    /// counted), one pass over the table instead of two. Grants of messages still sending
    /// are kept.
    static let v6BadgeGrantsWithoutValues = """
        CREATE TABLE badge_grants_v6 (
            message_id INTEGER NOT NULL,
            account TEXT NOT NULL,
            PRIMARY KEY (message_id, account)
        ) STRICT, WITHOUT ROWID;
        INSERT INTO badge_grants_v6 (message_id, account) SELECT message_id, account FROM badge_grants;
        DROP TABLE badge_grants;
        ALTER TABLE badge_grants_v6 RENAME TO badge_grants;
        """
}
