import Foundation
import Testing
import TuisongCore
import TuisongHTTP

@testable import BaiduProvider

/// Issue #40 item 3: store trouble is told in Baidu's shape with what it is, not as an
/// internal error to look up in the log.
@Suite struct StoreUnavailableTests {
    @Test func aFullDiskIsAnsweredWithItsReasonAndRetryAfter() throws {
        let full = StoreError(.unavailable, "SQLite error 13", unavailability: .storageFull)
        let response = BaiduReply.failure(7, .storeUnavailable(full))
        #expect(response.status == 503)
        let object = try #require(try JSONValue(parsing: response.body).objectValue)
        #expect(object["error_code"] == 30600)
        #expect(object["error_msg"]?.stringValue?.contains("disk is full") == true)
        let down = BaiduError.storeUnavailable(StoreError(.unavailable, "x", unavailability: .databaseDown))
        #expect(down.message.contains("cannot be reached"))
    }
}
