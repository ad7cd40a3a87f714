import TuisongCore
import TuisongSQLStore

/// One process per database file: a change is told to this process's subscribers only.
extension SQLiteStore {
    public func publish(_ change: StoreChange) async {
        changeFeed.deliver(change)
    }

    public func subscribe(_ handler: @escaping @Sendable (StoreChange?) -> Void) {
        changeFeed.subscribe(handler)
    }
}
