import Foundation
import Testing
import TuisongCore

@testable import TuisongStore

/// Retry leases are measured by the database's own clock (`SQLDialect.currentTimeMilliseconds`,
/// written once in `SQLStoreBackend+Retries`), so nodes whose clocks disagree still agree on
/// whose lease ended: on both databases it reads the wall clock now, in milliseconds since 1970.
@Suite struct DatabaseClockTests {
    @Test(arguments: Backend.allCases) func theDatabaseClockReadsNowInMilliseconds(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let before = SQLTime.milliseconds(Date())
            let read = try await store.sharedDatabase.read { db in
                try db.fetchOne("SELECT \(raw: db.dialect.currentTimeMilliseconds)")?[0].int
            }
            let after = SQLTime.milliseconds(Date())
            let now = try #require(read)
            // A few milliseconds either side: SQLite's Julian day is a double, rounded.
            #expect(now >= before - 5 && now <= after + 5, "read \(now), wall clock \(before)…\(after)")
        }
    }
}
