import Foundation
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

@testable import TuisongGateway

/// The admin password's first start and restarts: generated once and written for the operator,
/// or taken from `TUISONG_ADMIN_PASSWORD`, which changes it when it differs and costs one
/// check, no new hash, when it does not.
@Suite struct AdminPasswordBootstrapTests {
    static let iterations = 1_000

    func bootstrap(_ store: any GatewayStore, _ environment: [String: String], file: String) async throws
        -> AdminPassword.Bootstrap
    {
        try await AdminPassword.bootstrap(
            settings: store, environment: environment, passwordFile: file, iterations: Self.iterations)
    }

    @Test func aGeneratedPasswordIsWrittenOnceAndKept() async throws {
        try await withTestStore(.sqlite) { store in
            let directory = FileManager.default.temporaryDirectory.appending(path: "admin-pw-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: directory) }
            let file = directory.appending(path: "initial-admin-password").path
            #expect(try await bootstrap(store, [:], file: file) == .generated(file: file))
            let password = try String(contentsOfFile: file, encoding: .utf8).trimmingCharacters(in: .newlines)
            #expect(try await AdminPassword.verify(password, settings: store))
            try FileManager.default.removeItem(atPath: file)
            #expect(try await bootstrap(store, [:], file: file) == .existing)
            #expect(!FileManager.default.fileExists(atPath: file))
        }
    }

    @Test func theEnvironmentSetsItKeepsItAndRotatesIt() async throws {
        try await withTestStore(.sqlite) { store in
            let file = "/nonexistent/never-written"
            #expect(try await bootstrap(store, ["TUISONG_ADMIN_PASSWORD": "first"], file: file) == .fromEnvironment)
            let stored = try await store.setting(AdminPassword.settingKey)
            #expect(stored?.hasPrefix("pbkdf2-sha256$\(Self.iterations)$") == true)

            // The same variable on a restart: the stored hash is kept as it is (same salt).
            #expect(try await bootstrap(store, ["TUISONG_ADMIN_PASSWORD": "first"], file: file) == .existing)
            #expect(try await store.setting(AdminPassword.settingKey) == stored)

            // Another value rotates it.
            #expect(try await bootstrap(store, ["TUISONG_ADMIN_PASSWORD": "second"], file: file) == .fromEnvironment)
            #expect(try await AdminPassword.verify("second", settings: store))
            #expect(try await !AdminPassword.verify("first", settings: store))
        }
    }
}
