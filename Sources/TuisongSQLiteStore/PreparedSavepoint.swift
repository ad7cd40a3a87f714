import GRDB

/// SQLite ended the whole transaction while one of its savepoints failed (an I/O error, a full
/// disk): nothing written before it in the transaction survives, so no part of the transaction
/// may be answered as committed.
struct TransactionLost: Error {
    var cause: any Error
}

extension Database {
    /// `body` under a savepoint of its own, inside the caller's transaction: released when
    /// `body` returns, rolled back (and released) when it throws, so one write of a group fails
    /// alone. GRDB's `inSavepoint` runs `SAVEPOINT`, `RELEASE` and `ROLLBACK TO` as new texts
    /// each time, parsed and authorized per write (three savepoints of a chat message were six
    /// of its 7.6 statement compiles); these are prepared once per connection.
    ///
    /// Throws `TransactionLost` when SQLite rolled back the whole transaction meanwhile.
    func inPreparedSavepoint<T>(_ body: () throws -> T) throws -> T {
        precondition(isInsideTransaction, "a savepoint of a group belongs inside its transaction")
        try cachedStatement(sql: PreparedSavepoint.begin).execute()
        let value: T
        do {
            value = try body()
        } catch {
            guard isInsideTransaction else { throw TransactionLost(cause: error) }
            try cachedStatement(sql: PreparedSavepoint.rollback).execute()
            try cachedStatement(sql: PreparedSavepoint.release).execute()
            throw error
        }
        try cachedStatement(sql: PreparedSavepoint.release).execute()
        return value
    }
}

/// The texts of `inPreparedSavepoint` (one name: nested savepoints of one name are fine, each
/// `ROLLBACK TO` and `RELEASE` acts on the innermost).
private enum PreparedSavepoint {
    static let begin = "SAVEPOINT grouped_write"
    static let rollback = "ROLLBACK TO grouped_write"
    static let release = "RELEASE grouped_write"
}
