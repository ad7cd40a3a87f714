import Testing
import TuisongCore
import TuisongHTTP

@testable import TencentProvider

/// Issue #40 item 3: store trouble is Tencent's "timed out, please retry" with the reason.
@Suite struct StoreUnavailableTests {
    @Test func aFullDiskIsARetryWithItsReason() throws {
        let full = StoreError(.unavailable, "SQLite error 13", unavailability: .storageFull)
        let response = TencentReply.fail(TencentError(storeUnavailable: full))
        #expect(response.status == 200)
        let object = try #require(try JSONValue(parsing: response.body).objectValue)
        #expect(object["ActionStatus"] == "FAIL" && object["ErrorCode"] == 60008)
        #expect(object["ErrorInfo"]?.stringValue?.contains("disk is full") == true)
    }
}
