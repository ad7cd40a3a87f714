import Foundation
import Testing
import TuisongCore
import TuisongPostgresTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite struct StoreOpenerTests {
    @Test(arguments: [
        (
            "postgresql://tuisong:pw@db.example:5432/tuisong",
            StoreBackend.postgresql(url: "postgresql://tuisong:pw@db.example:5432/tuisong")
        ),
        ("postgres://db/tuisong", .postgresql(url: "postgres://db/tuisong")),
        ("PostgreSQL://db/tuisong", .postgresql(url: "PostgreSQL://db/tuisong")),
        ("postgresql:///tuisong?host=/run/postgresql", .postgresql(url: "postgresql:///tuisong?host=/run/postgresql")),
        (" postgresql://db/x ", .postgresql(url: "postgresql://db/x")),
        ("data/tuisong.db", .sqlite(path: "data/tuisong.db")),
        ("/var/lib/tuisong/tuisong.db", .sqlite(path: "/var/lib/tuisong/tuisong.db")),
        ("sqlite:data/tuisong.db", .sqlite(path: "data/tuisong.db")),
        ("sqlite:///var/lib/tuisong.db", .sqlite(path: "/var/lib/tuisong.db")),
        ("file:/tmp/t.db", .sqlite(path: "/tmp/t.db")),
        ("tuisong.db", .sqlite(path: "tuisong.db")),
    ])
    func schemeChoosesTheBackend(_ url: String, _ expected: StoreBackend) throws {
        #expect(try StoreOpener.backend(for: url) == expected)
    }

    @Test(arguments: ["", "   ", "mysql://u:pw@db/tuisong", "postgresql://", "sqlite:", "redis://cache"])
    func refusesWhatItCannotOpen(_ url: String) {
        #expect(throws: StoreOpener.UnsupportedURL.self) { try StoreOpener.backend(for: url) }
    }

    @Test func anUnsupportedURLNeverShowsItsPassword() throws {
        do {
            _ = try StoreOpener.backend(for: "mysql://user:hunter2@db/tuisong")
            Issue.record("mysql:// was accepted")
        } catch {
            #expect(!error.description.contains("hunter2"))
            #expect(error.description.contains("mysql"))
        }
    }

    @Test func maskingPasswordKeepsEverythingElse() {
        #expect(
            StoreOpener.maskingPassword("postgresql://tuisong:hunter2@db:5432/tuisong?sslmode=require")
                == "postgresql://tuisong:********@db:5432/tuisong?sslmode=require")
        #expect(
            StoreOpener.maskingPassword("postgresql://db/tuisong?user=u&password=hunter2&sslmode=require")
                == "postgresql://db/tuisong?user=u&password=********&sslmode=require")
        #expect(StoreOpener.maskingPassword("postgresql://tuisong@db/tuisong") == "postgresql://tuisong@db/tuisong")
        #expect(StoreOpener.maskingPassword("data/tuisong.db") == "data/tuisong.db")
        #expect(StoreOpener.redacted("postgresql://u:hunter2@db/tuisong?password=x") == "postgresql://db/tuisong")
    }

    @Test func opensSQLiteForAPath() async throws {
        let database = try TemporaryDatabase()
        defer { database.remove() }
        let store = try StoreOpener.open(url: "sqlite:" + database.path)
        defer { try? store.close() }
        #expect(store is SQLiteStore)
        #expect(store.backendName == "sqlite")
        #expect(store.location == database.path)
        #expect(FileManager.default.fileExists(atPath: database.path))
        #expect(try await store.schemaVersion() != nil)
    }

    @Test func opensPostgreSQLForItsURL() async throws {
        try await withTestDatabase { url in
            let store = try StoreOpener.open(
                url: url,
                options: .init(poolSize: 2, leaseDuration: .seconds(12), sliceSize: 700, claimPace: .milliseconds(7)))
            defer { try? store.close() }
            let postgres = try #require(store as? PostgresStore)
            #expect(store.backendName == "postgresql")
            #expect(postgres.leaseDuration == .seconds(12))
            #expect(postgres.sliceSize == 700)
            #expect(postgres.claimPace == .milliseconds(7))
            #expect(store.location.hasPrefix("postgresql://") || store.location.hasPrefix("postgres://"))
            #expect(try await store.schemaVersion() != nil)
        }
    }
}
