import Foundation
import Testing
import TuisongCrypto

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore

/// A released migration never runs again on a database that recorded it, so its text must not
/// change: old and new databases would part. These digests are the texts as the binaries that
/// ran them had them (main 0d24248, before the six shared migrations moved into
/// `SharedMigrationSQL`); a migration appended later is not pinned here.
@Suite struct ReleasedMigrationTextTests {
    /// PostgreSQL's core migrations, identifier and SHA-256 of the text run.
    static let postgres = [
        "pg1-baseline c68148327147f8ca43c5e0b2a1996480a27b0678525c8b9fee649cc0cc14a3ab",
        "pg2-work-queue 026091e1dc45e7c326b0c2cfd4a801bf83170ca248daf0359e7cca67d66433da",
        "pg3-console-sessions 24ea4e8fbe02ff08f0063a15ed1ecff1a2c08ff3bcb4d73dd37ba8dfe22e302b",
        "pg4-provider-tokens 2ba9df66de750337c23347769669307d2ff040d452a27160457e7ba0706ec43a",
        "pg5-idempotency-keys 66919bb07c0c402ce47a15f3e8384590886671a7a41fc26782caaead93fcf084",
        "pg6-open-slices-in-order 216b3652a4c5848cd0f8fdcab62571e59fb2a2962362034d5a7f608d2f9f15d4",
        "pg7-push-content 38f7f3af731b2db71c4d5a0216918e721953a1b99bc977bfa56b4213579468a1",
        "pg8-held-deliveries-expire da17281b697753d3eba229ee9f49a1a2949b1fb3cc8cc504c4174e4b095a60b9",
        "pg9-open-channels 4e456b0b6fed407f404eefa099245e13e48e7a4952a1f5e0a35f862ab03ad848",
        "pg10-delivery-receipts 6d60865f69c3440f3468945cdd60a8e2e7c760f9b731cf8259bc8fec624053d3",
        "pg11-webhooks 8e649355f1e62f67ea45f7b395cb6f4248749ff111e62dc04d2fbc1896429eb4",
        "pg12-receipt-credentials 8909fe9e86249a2523851f388d87b608eb0bd778488362d5a28c813a3c83708b",
        "pg13-credentials-both-environments-digests 389621d32fc629b0aba95459b5ee86ab9673676dfbcbc20563988b452c5aa43e",
        "pg14-receipt-sends 4b30c2b47f562788b65e43713897a8016ade0e147f2e9768ba47bd9895804de0",
        "pg15-backlog-by-app ef8e2e09a4c0b53ff44068dd5f65e19bfe57cacc176f2420b3cfecec6653c6a4",
        "pg16-delivery-service-message-id 41a70072645de46dcd9ff147ec00a69d0ec52a17f89a8c3274a378227baf292e",
        "pg17-receipt-inbox ae2a941361f5eaed1cba6677a0c5fd70567e566410506796b44ea186735df266",
    ]

    /// SQLite's migrations whose text `SharedMigrationSQL` now keeps for both databases.
    static let sqliteShared = [
        "v10 4fe9408a8df11a099313a623e72d78d08400c210e50836533abf33ab40637c60",
        "v11 f4120787648557600bf5d784b7196ba3c55a9a7073c4a2614f1a481f3254e0b1",
        "v12 50718f3c95e3608d5cf5f64625d5a34f0941099a4253cc78f36ad17e4aa7c068",
        "v14 da17281b697753d3eba229ee9f49a1a2949b1fb3cc8cc504c4174e4b095a60b9",
        "v19 389621d32fc629b0aba95459b5ee86ab9673676dfbcbc20563988b452c5aa43e",
        "v22 41a70072645de46dcd9ff147ec00a69d0ec52a17f89a8c3274a378227baf292e",
    ]

    static func digest(_ text: String) -> String {
        Digest.sha256(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    @Test("PostgreSQL's released core migrations run the text they always ran, byte for byte")
    func postgresTexts() {
        let now = PostgresSchema.coreMigrations.map { "\($0.identifier) \(Self.digest($0.sql))" }
        #expect(Array(now.prefix(Self.postgres.count)) == Self.postgres)
    }

    @Test("SQLite's migrations kept in SharedMigrationSQL run the text they always ran, byte for byte")
    func sqliteSharedTexts() {
        let now = [
            ("v10", Schema.v10ConsoleSessions), ("v11", Schema.v11ProviderTokens),
            ("v12", Schema.v12IdempotencyKeys), ("v14", Schema.v14HeldDeliveriesExpire),
            ("v19", Schema.v19CredentialsBothEnvironmentsDigests), ("v22", Schema.v22DeliveryServiceMessageID),
        ].map { "\($0.0) \(Self.digest($0.1))" }
        #expect(now == Self.sqliteShared)
    }
}
