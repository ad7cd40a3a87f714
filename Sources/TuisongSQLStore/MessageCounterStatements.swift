import TuisongCore

/// Statements on a message row's own counters that both backends run once per message of a
/// batch (claimed or requeued retries, retried deliveries' outcomes): one text, rendered once
/// per batch and bound per message (`SQLStatement`). On PostgreSQL the row holds its retried
/// deliveries' counts; its slices keep their own (`message_slices`).
package enum MessageCounterStatements {
    /// `n` of the message's deliveries move from queued to sending (claimed retries): n, the
    /// message.
    package static let moveQueuedToSending: SQLStatement =
        "UPDATE messages SET queued = queued - \(parameter: 1), sending = sending + \(parameter: 1) WHERE id = \(parameter: 2)"

    /// `n` of the message's deliveries move from sending back to queued (requeued retries): n,
    /// the message.
    package static let moveSendingToQueued: SQLStatement =
        "UPDATE messages SET queued = queued + \(parameter: 1), sending = sending - \(parameter: 1) WHERE id = \(parameter: 2)"

    /// `n` of the message's held deliveries failed (their hold expired): n, the message.
    package static let moveHeldToFailed: SQLStatement =
        "UPDATE messages SET held = held - \(parameter: 1), failed = failed + \(parameter: 1) WHERE id = \(parameter: 2)"

    /// Adds to each counter of the message: queued, sending, delivered, failed, skipped, held,
    /// the message.
    package static let addCounts: SQLStatement = """
        UPDATE messages SET queued = queued + \(parameter: 1), sending = sending + \(parameter: 2),
            delivered = delivered + \(parameter: 3), failed = failed + \(parameter: 4),
            skipped = skipped + \(parameter: 5), held = held + \(parameter: 6)
        WHERE id = \(parameter: 7)
        """
}
