import TuisongCore

/// Writes the receipts the services and apps post. On a database with one writer (SQLite) the
/// POSTs take turns through one queue: at most one receipt transaction is at the writer at a
/// time, so a push's own flushes (which it waits for before reading on) wait behind one receipt
/// write, not behind every POST in flight (during a 1M-device push with a service receipt per
/// device, the push otherwise ran only as fast as its receipts were written). The POSTs that come
/// while one is written go together as the next transaction, each under a savepoint of its
/// own, up to about `maxReceiptsPerWrite` receipts (a POST larger than that goes alone). Each
/// POST is still answered only once its transaction has committed. Where writers run side by
/// side (PostgreSQL) each POST is its own transaction, as before.
///
/// The services' POSTs go to the receipt inbox instead (`enqueue`), the same way: one row each,
/// those that come while one transaction is written together in the next, up to
/// `maxStatusesPerEnqueue` statuses.
final class ReceiptWriter: Sendable {
    private let store: any ReceiptStore
    private let queue: StoreBatcher<ReceiptPostReceipts, ReceiptRecording>?
    private let inbox: StoreBatcher<ReceiptInboxPost, Void>?

    /// Statuses one queued inbox write carries at most: a few POSTs of the largest batches, a
    /// millisecond or so of the writer (a row is the POST's body, not a row per status).
    static let maxStatusesPerEnqueue = 4000

    /// Receipts one queued write carries at most: about one POST of the largest batches a service
    /// sends (1,000), ten of 100, or a thousand apps' own, a few milliseconds of the writer.
    static let maxReceiptsPerWrite = 1000

    init(store: any ReceiptStore, writersTakeTurns: Bool) {
        self.store = store
        queue =
            writersTakeTurns
            ? StoreBatcher(
                concurrency: 1, maxBatch: Self.maxReceiptsPerWrite, maxWeight: Self.maxReceiptsPerWrite,
                weight: { $0.receipts.count }
            ) { posts in try await store.recordReceipts(posts: posts) }
            : nil
        inbox =
            writersTakeTurns
            ? StoreBatcher(
                concurrency: 1, maxBatch: 64, maxWeight: Self.maxStatusesPerEnqueue, weight: { $0.statuses }
            ) { posts in
                try await store.enqueueReceiptPosts(posts)
                return posts.map { _ in .success(()) }
            }
            : nil
    }

    /// Keeps one POST in the receipt inbox (`ReceiptStore.enqueueReceiptPosts`); returns once it
    /// is committed.
    func enqueue(_ post: ReceiptInboxPost) async throws {
        guard let inbox else { return try await store.enqueueReceiptPosts([post]) }
        try await inbox.submit(post)
    }

    /// Records one POST's receipts (`ReceiptStore.recordReceipts(appID:_:)`); returns once they
    /// are committed.
    func record(appID: Int64, _ receipts: [DeliveryReceipt]) async throws -> ReceiptRecording {
        guard !receipts.isEmpty else { return ReceiptRecording() }
        guard let queue else { return try await store.recordReceipts(appID: appID, receipts) }
        return try await queue.submit(ReceiptPostReceipts(appID: appID, receipts: receipts))
    }
}
