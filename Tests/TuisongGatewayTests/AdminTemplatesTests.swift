import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongGateway

@Suite struct TemplatePatternTests {
    @Test(arguments: [
        ("订单 {0} 已发货", ["A-17"], "订单 A-17 已发货"),
        ("{1}{0}{1}", ["a", "b"], "bab"),
        ("{0} and {2}", ["x"], "x and {2}"),
        ("{{0}} is {0}", ["zero"], "{0} is zero"),
        ("}} {", ["x"], "} {"),
        ("{x} {} {-1} {00001}", ["a", "b"], "{x} {} {-1} {00001}"),
        ("{0001}", ["a", "b"], "b"),
        ("no placeholders", ["unused"], "no placeholders"),
        ("", [], ""),
    ])
    func renders(pattern: String, arguments: [String], expected: String) {
        #expect(TemplatePattern.render(pattern, arguments: arguments) == expected)
    }

    @Test func countsArguments() {
        #expect(TemplatePattern.argumentCount("{0} {3}") == 4)
        #expect(TemplatePattern.argumentCount("{{3}}") == 0)
        #expect(TemplatePattern.argumentCount("plain") == 0)
        let template = PushTemplate(id: 1, appID: 1, name: "n", titlePattern: "{1}", bodyPattern: "{0}")
        #expect(template.argumentCount == 2)
        #expect(template.render(arguments: ["b", "t"]) == ("t", "b"))
    }
}

@Suite(.serialized) struct AdminTemplatesTests {
    @Test func createEditDeleteWithinTheApp() async throws {
        let (gw, client) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        try await client.login()
        let app = try await gw.runtime.store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h1")
        let other = try await gw.runtime.store.createApp(name: "b", bundleID: "com.example.b", apiKeyHash: "h2")

        let created = try await client.call(
            "POST", "/apps/\(app.id)/templates",
            json: ["name": "shipped", "title_pattern": "订单 {0}", "body_pattern": "{1} 已发货，预计 {2} 送达"])
        #expect(created.status == 201)
        let id = try #require(created.jsonObject["id"] as? Int)
        #expect(created.jsonObject["argument_count"] as? Int == 3)

        let duplicate = try await client.call(
            "POST", "/apps/\(app.id)/templates", json: ["name": "shipped", "body_pattern": "x"])
        #expect(duplicate.status == 409)
        #expect(duplicate.errorField == "name")
        let sameNameElsewhere = try await client.call(
            "POST", "/apps/\(other.id)/templates", json: ["name": "shipped", "body_pattern": "x"])
        #expect(sameNameElsewhere.status == 201, "names are unique per app only")
        let noBody = try await client.call(
            "POST", "/apps/\(app.id)/templates", json: ["name": "empty", "body_pattern": " "])
        #expect(noBody.status == 400)
        #expect(noBody.errorField == "body_pattern")

        let edited = try await client.call(
            "PUT", "/apps/\(app.id)/templates/\(id)",
            json: ["name": "delivered", "title_pattern": "", "body_pattern": "{0} delivered"])
        #expect(edited.status == 200)
        let list = try await client.call("GET", "/apps/\(app.id)/templates")
        let templates = list.list("templates")
        #expect(templates.count == 1)
        #expect(templates.first?["name"] as? String == "delivered")
        #expect(templates.first?["argument_count"] as? Int == 1)

        // A template is reached only through its own app.
        #expect(
            try await client.call("PUT", "/apps/\(other.id)/templates/\(id)", json: ["name": "x", "body_pattern": "y"])
                .status == 404)
        #expect(try await client.call("DELETE", "/apps/\(other.id)/templates/\(id)").status == 404)
        #expect(try await client.call("DELETE", "/apps/\(app.id)/templates/\(id)").status == 204)
        #expect(try await gw.runtime.store.templates(appID: app.id).isEmpty)
    }

    @Test func storeKeepsTemplatesPerAppAndDeletesThemWithTheApp() async throws {
        let (gw, _) = try await AdminTestClient.start()
        defer { Task { await gw.stop() } }
        let store = gw.runtime.store
        let app = try await store.createApp(name: "a", bundleID: "com.example.a", apiKeyHash: "h1")
        let b = try await store.createTemplate(appID: app.id, name: "b", titlePattern: "", bodyPattern: "2")
        let a = try await store.createTemplate(appID: app.id, name: "a", titlePattern: "t", bodyPattern: "1")
        #expect(try await store.templates(appID: app.id).map(\.name) == ["a", "b"])
        #expect(try await store.template(appID: app.id, name: "b") == b)
        await #expect(throws: StoreError.self) {
            try await store.createTemplate(appID: app.id, name: "a", titlePattern: "", bodyPattern: "dup")
        }
        await #expect(throws: StoreError.self) {
            try await store.createTemplate(appID: 999, name: "x", titlePattern: "", bodyPattern: "no app")
        }
        var renamed = a
        renamed.name = "b"
        await #expect(throws: StoreError.self) { try await store.updateTemplate(renamed) }
        _ = try await store.deleteApp(id: app.id)
        #expect(try await store.template(id: a.id) == nil)
    }
}
