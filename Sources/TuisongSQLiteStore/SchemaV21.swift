import TuisongSQLStore

extension Schema {
    static let v21Identifier = "v21-backlog-by-app"

    /// Each app's messages queued or sending, in id order (the rowid ends every index entry):
    /// admission counts an app's backlog from it on accepts (`WorkQueue.backlog`), and the
    /// dispatcher's claim finds the apps with queued messages and takes each one's oldest
    /// (`claimDueMessages`, fair across apps). Partial, so it holds only what is pending, never
    /// the history.
    static let v21BacklogByApp = """
        CREATE INDEX messages_backlog_by_app ON messages(state, app_id) WHERE state IN ('queued', 'sending');
        """
}
