extension Schema {
    /// A bound device carries its account's app state (`devices.app_state`, unused since v1):
    /// an account audience's page then reads it from the device row, with no lookup in
    /// `accounts` per device, which was most of the page's cost in a per-recipient push.
    /// `accounts.app_state` stays what is reported; `setAppState` writes both in one
    /// transaction, binding copies the account's, and unbinding clears it.
    static let v7DeviceAppStateFromAccount = """
        UPDATE devices SET app_state = CASE WHEN im_account IS NULL THEN NULL ELSE
            (SELECT a.app_state FROM accounts a WHERE a.app_id = devices.app_id AND a.account = devices.im_account)
        END;
        """
}
