import Synchronization
import TuisongCore

/// Records of messages this process created and has not claimed yet: the claim that starts
/// one takes its record from here instead of reading its row back and decoding its JSON
/// columns again (on PostgreSQL, under a chat load, the read and the decoding cost the server
/// 16 µs and the gateway ~40 µs a message; issue #47).
///
/// A record kept after its row was committed (PostgreSQL's inserts go in batches, and the
/// id is known only then) may come after a claim that already read the row: a claim remembers
/// the ids it did not find (the last `limit / 4` or more), and such a record is not kept.
///
/// Bounded: once `limit` records are kept, the oldest quarter (the lowest ids) goes. A record
/// nobody takes — the message was cancelled, or on several nodes another node claimed it —
/// goes that way; a claim that finds no record reads the row.
public final class CreatedMessageRecords: Sendable {
    public let limit: Int
    private let state = Mutex<(records: [Int64: MessageRecord], missed: Set<Int64>)>(([:], []))

    public init(limit: Int = 20_000) {
        self.limit = max(4, limit)
    }

    public func keep(_ record: MessageRecord) {
        state.withLock { state in
            guard state.missed.remove(record.id) == nil else { return }
            if state.records.count >= limit {
                for id in state.records.keys.sorted().prefix(limit / 4) { state.records.removeValue(forKey: id) }
            }
            state.records[record.id] = record
        }
    }

    /// The records of `ids` that are kept, which are kept no longer.
    public func take(_ ids: some Sequence<Int64>) -> [Int64: MessageRecord] {
        state.withLock { state in
            var taken: [Int64: MessageRecord] = [:]
            for id in ids {
                if let record = state.records.removeValue(forKey: id) {
                    taken[id] = record
                } else {
                    if state.missed.count >= limit / 4 { state.missed.removeAll(keepingCapacity: true) }
                    state.missed.insert(id)
                }
            }
            return taken
        }
    }

    /// Drops the kept records that `condition` names.
    public func forget(where condition: (MessageRecord) -> Bool) {
        state.withLock { state in
            state.records = state.records.filter { !condition($0.value) }
        }
    }

    /// Records kept now.
    public var count: Int { state.withLock { $0.records.count } }
}
