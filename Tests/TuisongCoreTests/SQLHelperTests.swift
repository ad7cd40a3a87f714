import Foundation
import Testing
import TuisongCore

/// The one placeholder list, chunker and millisecond converter every store and plugin uses.
@Suite struct SQLHelperTests {
    @Test func placeholdersAreOnePerValueAndNULLForNone() {
        #expect(SQLList.placeholders(0) == "NULL", "x IN (NULL) matches nothing and is valid SQL everywhere")
        #expect(SQLList.placeholders(1) == "?")
        #expect(SQLList.placeholders(3) == "?, ?, ?")
    }

    @Test func paddedListsUseTheSamePlaceholders() {
        let lists = SQLList.chunks(["a", "b", "c", "a"])
        #expect(lists.count == 1)
        #expect(lists[0].marks == SQLList.marker + "?, ?, ?, ?", "three distinct values padded to four")
        #expect(lists[0].values == [.text("a"), .text("b"), .text("c"), .text("c")])
        #expect(SQLList.chunks([String]()).isEmpty)
    }

    @Test func chunksCoverEveryElementInOrder() {
        #expect([Int]().chunks(ofCount: 3).isEmpty)
        #expect([1].chunks(ofCount: 3).map(Array.init) == [[1]])
        #expect([1, 2, 3].chunks(ofCount: 3).map(Array.init) == [[1, 2, 3]])
        #expect([1, 2, 3, 4].chunks(ofCount: 3).map(Array.init) == [[1, 2, 3], [4]])
        let many = Array(0..<1001)
        let chunks = many.chunks(ofCount: 500)
        #expect(chunks.map(\.count) == [500, 500, 1])
        #expect(chunks.flatMap { $0 } == many)
    }

    @Test func millisecondsRoundToTheNearestAndRoundTrip() {
        #expect(SQLTime.milliseconds(Date(timeIntervalSince1970: 1.0004)) == 1000)
        #expect(SQLTime.milliseconds(Date(timeIntervalSince1970: 1.0006)) == 1001)
        #expect(SQLTime.milliseconds(Date(timeIntervalSince1970: -1.0006)) == -1001)
        // A stored instant read back and written again keeps its value, even where the
        // Double product falls just below the integer (rounding down would lose a millisecond).
        for stored in [Int64(1_700_000_000_123), 1_700_000_000_001, 1_795_523_816_795, 0] {
            #expect(SQLTime.milliseconds(SQLTime.date(stored)) == stored)
        }
        #expect(SQLTime.milliseconds(Date(timeIntervalSince1970: 1_700_000_000.123)) == 1_700_000_000_123)
    }
}
