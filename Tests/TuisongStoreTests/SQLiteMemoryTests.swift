import Foundation
import Testing
import TuisongCore

@testable import TuisongSQLiteStore

/// SQLite's memory is counted by the allocator `CSQLiteShims` installs before `main`, so SQLite
/// runs without its own statistics (and their process-wide mutex) and the gauge still reads.
@Suite struct SQLiteMemoryTests {
    @Test func sqliteMemoryIsCountedWithoutSQLitesStatistics() async throws {
        #expect(SQLiteStore.countsMemoryWithoutStatistics)
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        // A page cache worth counting: rows written and read back through the store's connections.
        try await fixture.store.write { db in
            try db.execute(sql: "CREATE TABLE filler (body BLOB)")
            for _ in 0..<64 { try db.execute(sql: "INSERT INTO filler VALUES (zeroblob(4000))") }
        }
        let read = try await fixture.store.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM filler") }
        #expect(read == 64)
        // At least this store's cached pages (other tests' stores come and go beside it).
        #expect(SQLiteStore.memoryInUse > 64 * 4096)
    }
}
