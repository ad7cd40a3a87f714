import GRDB
import TuisongCore

extension Schema {
    static let v27Identifier = "v27-state-conditions-without-in-lists"

    /// A message scheduled, queued or sending: the `messages_pending` index's condition from
    /// v27 on, and `SQLiteDialect.pendingMessagesCondition`, which every query that should use
    /// the index spells out.
    static let pendingMessagesCondition = anyOf("state", ["scheduled", "queued", "sending"])

    /// `column = 'a' OR column = 'b' …` in parentheses.
    static func anyOf(_ column: String, _ values: [String]) -> String {
        "(" + values.map { "\(column) = '\($0)'" }.joined(separator: " OR ") + ")"
    }

    /// SQLite runs `x IN ('a', 'b', 'c')` — a list of three values or more — by building a
    /// temporary B-tree of the list, with a pager of its own, every time the expression runs
    /// (two values or fewer are compared in line). The state CHECKs of `messages`, `deliveries`
    /// and `webhook_outbox` and the condition of `messages_pending` run on every insert of
    /// their rows and every change of their state: a chat message's insert, its claim and its
    /// final flush built about eight such trees, ~2 % of an Easemob message's CPU in the
    /// gateway (docs/benchmarks.md, session nineteen). The same conditions written as `=`
    /// comparisons joined by OR accept exactly the same rows. The CHECKs are edited in place
    /// (`editTableTexts`, as v15); the index is built again (it holds only the pending
    /// messages, but building it reads the whole table once).
    static let v27Edits: [(table: String, old: String, new: String)] = [
        (
            "messages", "CHECK (state IN ('scheduled', 'queued', 'sending', 'completed', 'cancelled'))",
            "CHECK \(anyOf("state", ["scheduled", "queued", "sending", "completed", "cancelled"]))"
        ),
        (
            "deliveries", "CHECK (state IN ('queued', 'sending', 'delivered', 'failed', 'skipped', 'held'))",
            "CHECK \(anyOf("state", ["queued", "sending", "delivered", "failed", "skipped", "held"]))"
        ),
        (
            "webhook_outbox", "CHECK (state IN ('pending', 'delivered', 'failed'))",
            "CHECK \(anyOf("state", ["pending", "delivered", "failed"]))"
        ),
    ]

    static func v27StateConditionsWithoutInLists(_ db: Database) throws {
        try db.execute(
            sql: """
                DROP INDEX messages_pending;
                CREATE INDEX messages_pending ON messages(state, send_at) WHERE \(pendingMessagesCondition);
                """)
        try editTableTexts(db, migration: v27Identifier, v27Edits)
    }
}
