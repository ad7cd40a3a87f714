import Foundation
import GRDB
import Testing
import TuisongCore

@testable import TuisongSQLiteStore

/// The group commit's writes share one transaction, each under a savepoint of its own.
@Suite("Grouped writes")
struct GroupedWriteTests {
    struct Refused: Error {}

    static func insert(_ values: [Int], thenThrow: (any Error)? = nil) -> SQLiteStore.GroupedWrite {
        SQLiteStore.GroupedWrite { db in
            for value in values { try db.execute(sql: "INSERT INTO scratch (v) VALUES (?)", arguments: [value]) }
            if let thenThrow { throw thenThrow }
            return values.count
        }
    }

    @Test("A write of a group that fails is rolled back alone; the others commit, group after group")
    func failingWriteRollsBackAlone() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let pool = fixture.store.pool
        try await pool.write { db in try db.execute(sql: "CREATE TABLE scratch (v INTEGER UNIQUE)") }
        for round in 0..<3 {
            let base = round * 10
            let results = try await pool.write { db in
                try SQLiteStore.runGrouped(
                    db,
                    [
                        Self.insert([base + 1]),
                        // Its first row is in, then a unique violation: neither row may stay.
                        Self.insert([base + 2, base + 1]),
                        Self.insert([base + 3, base + 4]),
                        Self.insert([base + 5], thenThrow: Refused()),
                        Self.insert([base + 6]),
                    ])
            }
            #expect(results.count == 5)
            #expect((try? results[0].get()) as? Int == 1)
            #expect(throws: StoreError.self) { try results[1].get() }
            #expect((try? results[2].get()) as? Int == 2)
            #expect(throws: (any Error).self) { try results[3].get() }
            #expect((try? results[4].get()) as? Int == 1)
        }
        let stored = try await pool.read { db in try Int.fetchAll(db, sql: "SELECT v FROM scratch ORDER BY v") }
        #expect(stored == [1, 3, 4, 6, 11, 13, 14, 16, 21, 23, 24, 26])
    }
}
