import Testing

@testable import TuisongSQLStore

/// How the badge-grant clean-up shares finished messages out among its transactions.
struct FinishedBadgeGrantsTests {
    typealias Finished = FinishedBadgeGrants.Finished

    @Test func wholeMessagesArePackedInOrderUpToATransactionsRows() {
        let finished = [
            Finished(messageID: 1, grants: 2), Finished(messageID: 2, grants: 1), Finished(messageID: 3, grants: 2),
            Finished(messageID: 4, grants: 5), Finished(messageID: 5, grants: 1),
        ]
        #expect(
            FinishedBadgeGrants.transactions(finished, perTransaction: 5) == [
                .whole([1, 2, 3]), .whole([4]), .whole([5]),
            ])
        #expect(FinishedBadgeGrants.transactions(finished, perTransaction: 100) == [.whole([1, 2, 3, 4, 5])])
    }

    @Test func aMessageWithMoreGrantsThanATransactionTakesIsSlicedOnItsOwn() {
        let finished = [
            Finished(messageID: 7, grants: 1), Finished(messageID: 8, grants: 6), Finished(messageID: 9, grants: 3),
        ]
        #expect(
            FinishedBadgeGrants.transactions(finished, perTransaction: 5) == [
                .sliced(8), .whole([7, 9]),
            ])
    }

    @Test func nothingFinishedIsNoTransaction() {
        #expect(FinishedBadgeGrants.transactions([], perTransaction: 5).isEmpty)
    }
}
