import Foundation
import Testing
import TuisongCore
import TuisongHTTP

@testable import EasemobProvider

/// Issue #40 item 3: store trouble is Easemob's 503 with the reason and `Retry-After`.
@Suite struct StoreUnavailableTests {
    @Test func aFullDiskIs503WithItsReasonAndRetryAfter() throws {
        let full = StoreError(.unavailable, "SQLite error 13", unavailability: .storageFull)
        let response = EasemobReply.failure(.storeUnavailable(full), now: Date())
        #expect(response.status == 503)
        #expect(response.headers["Retry-After"] == "30")
        let object = try #require(try JSONValue(parsing: response.body).objectValue)
        #expect(object["error"] == "service_unavailable")
        #expect(object["error_description"]?.stringValue?.contains("disk is full") == true)
    }
}
