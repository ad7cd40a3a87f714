import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit
import TuisongTransportKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

/// Settings, APNs credentials and templates, the same on both databases.
@Suite("Settings, credentials and templates")
struct SettingsStoreTests {
    @Test("A setting is set, replaced, and inserted only when absent", arguments: Backend.allCases)
    func settings(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            #expect(try await store.setting("console.secret") == nil)
            #expect(try await store.insertSettingIfAbsent("console.secret", value: "first"))
            #expect(try await store.insertSettingIfAbsent("console.secret", value: "second") == false)
            #expect(try await store.setting("console.secret") == "first")
            try await store.setSetting("console.secret", value: "third")
            try await store.setSetting("other", value: "名前")
            #expect(try await store.setting("console.secret") == "third")
            #expect(try await store.setting("other") == "名前")
        }
    }

    @Test(
        "APNs credentials round-trip, the newest without a selector is active, status and delete",
        arguments: Backend.allCases)
    func credentials(_ backend: Backend) async throws {
        let clock = ManualClock()
        try await withStore(backend, clock: clock) { store in
            let app = try await makeApp(store)
            let expires = Date(timeIntervalSince1970: 1_900_000_000.123)
            let p8 = try await store.addCredential(
                NewCredential(
                    appID: app.id, channel: .apns, kind: .p8, environment: .production, teamID: "TEAM123456",
                    keyID: "KEY1234567",
                    subject: nil, topics: ["com.example.demo", "com.example.demo.voip"], expiresAt: nil,
                    encryptedSecret: [0, 1, 2, 255]))
            #expect(p8.kind == .p8)
            #expect(p8.topics == ["com.example.demo", "com.example.demo.voip"])
            #expect(p8.encryptedSecret == [0, 1, 2, 255])
            #expect(p8.status == "ok")
            #expect(p8.createdAt == clock.now)
            #expect(p8.selector == nil)
            clock.advance(by: 1)
            let newer = try await store.addCredential(
                NewCredential(
                    appID: app.id, channel: .apns, kind: .p12, environment: .production, teamID: nil, keyID: nil,
                    subject: "Apple Push Services: com.example.demo", topics: [], expiresAt: expires,
                    encryptedSecret: [9]))
            let selected = try await store.addCredential(
                NewCredential(
                    appID: app.id, channel: .apns, kind: .pem, environment: .production, teamID: nil, keyID: nil,
                    subject: nil,
                    topics: [], expiresAt: nil, encryptedSecret: [7], selector: "cert-2"))
            #expect(newer.expiresAt == expires)
            #expect(try await store.credential(id: newer.id) == newer)
            #expect(try await store.credentials(appID: app.id).map(\.id) == [p8.id, newer.id, selected.id])
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id
                    == newer.id)
            #expect(try await store.activeCredential(appID: app.id, channel: .apns, environment: .sandbox) == nil)

            try await store.setCredentialStatus(id: newer.id, status: "failing", reason: "BadCertificate")
            let failing = try #require(await store.credential(id: newer.id))
            #expect(failing.isFailing)
            #expect(failing.statusReason == "BadCertificate")
            // A failing credential does not replace one that works; with none working, the newest serves.
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id == p8.id)
            try await store.setCredentialStatus(id: p8.id, status: "failing", reason: "InvalidProviderToken")
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id
                    == newer.id)
            try await store.setCredentialStatus(id: p8.id, status: "ok", reason: nil)
            let refused = await #expect(throws: StoreError.self) {
                try await store.setCredentialStatus(id: newer.id, status: "broken", reason: nil)
            }
            #expect(refused?.code == .conflict)

            #expect(try await store.deleteCredential(id: newer.id))
            #expect(try await store.deleteCredential(id: newer.id) == false)
            #expect(
                try await store.activeCredential(appID: app.id, channel: .apns, environment: .production)?.id == p8.id)
            let orphan = await #expect(throws: StoreError.self) {
                _ = try await store.addCredential(
                    NewCredential(
                        appID: app.id + 100, channel: .apns, kind: .p8, environment: .sandbox, teamID: nil, keyID: nil,
                        subject: nil,
                        topics: [], expiresAt: nil, encryptedSecret: [1]))
            }
            #expect(orphan?.code == .notFound)
        }
    }

    @Test("Templates are listed by name, unique per app, updated and deleted", arguments: Backend.allCases)
    func templates(_ backend: Backend) async throws {
        try await withStore(backend) { store in
            let app = try await makeApp(store)
            let other = try await makeApp(store, "other")
            let welcome = try await store.createTemplate(
                appID: app.id, name: "welcome", titlePattern: "Hi {name}", bodyPattern: "Welcome")
            let upper = try await store.createTemplate(appID: app.id, name: "Zeta", titlePattern: "", bodyPattern: "z")
            let beta = try await store.createTemplate(appID: app.id, name: "beta", titlePattern: "b", bodyPattern: "b")
            let chinese = try await store.createTemplate(appID: app.id, name: "欢迎", titlePattern: "", bodyPattern: "")
            _ = try await store.createTemplate(appID: other.id, name: "welcome", titlePattern: "", bodyPattern: "")
            // Code point order: capitals before small letters, CJK last.
            #expect(try await store.templates(appID: app.id).map(\.id) == [upper.id, beta.id, welcome.id, chinese.id])
            #expect(try await store.template(id: welcome.id) == welcome)
            #expect(try await store.template(appID: app.id, name: "welcome") == welcome)
            #expect(try await store.template(appID: app.id, name: "nope") == nil)

            let duplicate = await #expect(throws: StoreError.self) {
                _ = try await store.createTemplate(appID: app.id, name: "welcome", titlePattern: "", bodyPattern: "")
            }
            #expect(duplicate?.code == .conflict)
            let orphan = await #expect(throws: StoreError.self) {
                _ = try await store.createTemplate(appID: 9_999, name: "x", titlePattern: "", bodyPattern: "")
            }
            #expect(orphan?.code == .notFound)

            var renamed = welcome
            renamed.name = "hello"
            renamed.bodyPattern = "Hello {name}"
            try await store.updateTemplate(renamed)
            #expect(try await store.template(id: welcome.id) == renamed)
            renamed.name = "beta"
            let taken = await #expect(throws: StoreError.self) { try await store.updateTemplate(renamed) }
            #expect(taken?.code == .conflict)
            var ghost = renamed
            ghost.id = 9_999
            let missing = await #expect(throws: StoreError.self) { try await store.updateTemplate(ghost) }
            #expect(missing?.code == .notFound)

            #expect(try await store.deleteTemplate(id: beta.id))
            #expect(try await store.deleteTemplate(id: beta.id) == false)
            #expect(try await store.deleteApp(id: app.id))
            #expect(try await store.template(id: welcome.id) == nil)
            #expect(try await store.templates(appID: other.id).count == 1)
        }
    }
}
