import Foundation
import Testing
import TuisongCore
import TuisongStore

@testable import TuisongGateway

@Suite struct ConfigDatabaseTests {
    @Test func defaultsAreSQLiteAtThePath() {
        let config = GatewayConfig.embeddedDefault
        #expect(config.database.url == "")
        #expect(config.database.effectiveURL == "data/tuisong.db")
        #expect(config.database.backend == .sqlite(path: "data/tuisong.db"))
        #expect(config.database.sqlitePath == "data/tuisong.db")
        #expect(config.database.poolSize == 8)
        #expect(config.cluster.leaseSeconds == 30)
        #expect(config.cluster.sliceSize == 20000)
        #expect(config.cluster.claimPaceMilliseconds == 50)
        #expect(StoreOpener.Options(config).claimPace == .milliseconds(50))
        #expect(config.database.directory == "data")
    }

    @Test func aPostgreSQLURLInTheEnvironmentSelectsPostgreSQL() throws {
        let config = try GatewayConfig.load(
            fileContents: nil,
            environment: [
                "TUISONG_DATABASE_URL": "postgresql://tuisong:hunter2@db.example:5432/tuisong",
                "TUISONG_DATABASE_POOL_SIZE": "16", "TUISONG_CLUSTER_LEASE_SECONDS": "20",
                "TUISONG_CLUSTER_SLICE_SIZE": "2000", "TUISONG_CLUSTER_CLAIM_PACE_MS": "0",
            ])
        #expect(config.database.backend == .postgresql(url: "postgresql://tuisong:hunter2@db.example:5432/tuisong"))
        #expect(config.database.sqlitePath == nil)
        #expect(config.database.location == "postgresql://db.example:5432/tuisong")
        #expect(config.database.poolSize == 16)
        #expect(config.cluster.leaseSeconds == 20)
        #expect(config.cluster.sliceSize == 2000)
        #expect(config.cluster.claimPaceMilliseconds == 0)
        #expect(StoreOpener.Options(config).claimPace == .zero)
        // Local mode's files stay beside database.path.
        #expect(config.database.directory == "data")
    }

    @Test func urlWinsOverPath() throws {
        let file = Data(#"{"database": {"path": "/tmp/old.db", "url": "sqlite:/tmp/new.db"}}"#.utf8)
        let config = try GatewayConfig.load(fileContents: file, environment: [:])
        #expect(config.database.backend == .sqlite(path: "/tmp/new.db"))
        #expect(config.database.directory == "/tmp")
        let pathOnly = try GatewayConfig.load(
            fileContents: Data(#"{"database": {"path": "/srv/t/x.db"}}"#.utf8), environment: [:])
        #expect(pathOnly.database.backend == .sqlite(path: "/srv/t/x.db"))
    }

    @Test func anUnsupportedSchemeIsAConfigErrorWithoutThePassword() {
        do {
            _ = try GatewayConfig.load(
                fileContents: nil, environment: ["TUISONG_DATABASE_URL": "mysql://u:hunter2@db/tuisong"])
            Issue.record("mysql:// was accepted")
        } catch {
            #expect(error.key == "database.url")
            #expect(!error.description.contains("hunter2"))
        }
    }

    @Test func outOfRangeClusterKeysAreRefused() {
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_DATABASE_POOL_SIZE": "0"])
        }
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_CLUSTER_LEASE_SECONDS": "1"])
        }
        #expect(throws: ConfigError.self) {
            try GatewayConfig.load(fileContents: nil, environment: ["TUISONG_CLUSTER_CLAIM_PACE_MS": "1001"])
        }
    }

    @Test func checkConfigMasksTheURLPassword() throws {
        let config = try GatewayConfig.load(
            fileContents: nil,
            environment: ["TUISONG_DATABASE_URL": "postgresql://tuisong:hunter2@db/tuisong?password=again"])
        let masked = config.maskedJSON()
        #expect(!masked.contains("hunter2"))
        #expect(!masked.contains("again"))
        #expect(masked.contains("postgresql://tuisong:********@db/tuisong?password=********"))
    }
}
