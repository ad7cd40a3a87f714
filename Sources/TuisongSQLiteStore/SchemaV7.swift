import TuisongSQLStore

extension Schema {
    /// A bound device carries its account's row id (`devices.account_id`) and app state
    /// (`devices.app_state`, unused since v1): an account audience's page then reads both from
    /// the device row, with no lookup in `accounts` per device, which was most of the page's
    /// cost in a per-recipient push, and `grantBadges` works on row ids. `accounts` stays what
    /// is reported: `setAppState` writes both in one transaction, binding copies the account's,
    /// unbinding and deleting the account clear them.
    static let v7DevicesCarryTheirAccount = """
        ALTER TABLE devices ADD COLUMN account_id INTEGER;
        UPDATE devices SET (account_id, app_state) = (
            SELECT a.id, a.app_state FROM accounts a WHERE a.app_id = devices.app_id AND a.account = devices.im_account);
        """
}
