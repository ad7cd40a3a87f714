import Foundation
import Testing
import TuisongCore
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// `docs/openapi.json` against a running gateway: every documented operation is called, and
/// every answer (errors included) must be one the document lists for that operation, with a
/// body its schema accepts.
@Suite(.serialized) struct OpenAPITests {
    @Test func everyOperationAnswersAsDocumented() async throws {
        let spec = try OpenAPISpec(url: repositoryRoot().appending(path: "docs/openapi.json"))
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp(bundleID: "com.example.openapi")
        // The app posts its own receipts: its pushes carry a token for `POST /api/v1/receipts`.
        var app = try #require(try await gw.runtime.store.app(id: appID))
        app.appReceipts = true
        try await gw.runtime.store.updateApp(app)
        await gw.runtime.adminAPI.appChanged(appID)
        let checker = ResponseChecker(spec: spec, baseURL: gw.baseURL)
        gw.runtime.localMock?.setFaults(LookAlikeConfiguration.Faults.magicTokenPrefixes)

        let device = token(1, prefix: "ab")
        let dead = token(2, prefix: "410")
        let path = "/api/v1/devices/{token}"
        let registration: [String: Any] = ["environment": "production", "user": "u-1", "tags": ["vip", "北京"]]
        try checker.request(registration, path, "put")
        try await checker.call("PUT", "/api/v1/devices/\(device)", path, key: key, json: registration, expect: 201)
        try await checker.call(
            "PUT", "/api/v1/devices/\(device)", path, key: key,
            json: ["environment": "production", "locale": "zh-Hans"],
            expect: 200)
        try await checker.call(
            "PUT", "/api/v1/devices/\(dead)", path, key: key, json: ["environment": "production"], expect: 201)
        try await checker.call("PUT", "/api/v1/devices/xyz", path, key: key, json: registration, expect: 400)
        try await checker.call(
            "PUT", "/api/v1/devices/\(device)", path, key: key, json: ["environment": "staging"], expect: 400)
        try await checker.call("PUT", "/api/v1/devices/\(device)", path, json: registration, expect: 401)
        try await checker.call(
            "PUT", "/api/v1/devices/\(device)", path, key: key, body: Data("environment=production".utf8),
            contentType: "application/x-www-form-urlencoded", expect: 415)
        try await checker.call(
            "PUT", "/api/v1/devices/\(device)", path, key: key,
            json: ["environment": "production", "user": String(repeating: "x", count: 70_000)], expect: 413)
        try await checker.call("GET", "/api/v1/devices/\(device)", path, key: key, expect: 200)
        try await checker.call("GET", "/api/v1/devices/\(token(9))", path, key: key, expect: 404)
        try await checker.call("GET", "/api/v1/devices/a%20b", path, key: key, expect: 400)
        try await checker.call("POST", "/api/v1/devices/\(device)", path, key: key, json: [:], expect: 405)

        let tags = "/api/v1/devices/{token}/tags"
        try await checker.call("GET", "/api/v1/devices/\(device)/tags", tags, key: key, expect: 200)
        try await checker.call("GET", "/api/v1/devices/\(token(9))/tags", tags, key: key, expect: 404)
        let tag = "/api/v1/devices/{token}/tags/{tag}"
        try await checker.call("PUT", "/api/v1/devices/\(device)/tags/sports", tag, key: key, expect: 204)
        try await checker.call("PUT", "/api/v1/devices/\(device)/tags/bad%20tag", tag, key: key, expect: 400)
        try await checker.call("PUT", "/api/v1/devices/\(token(9))/tags/sports", tag, key: key, expect: 404)
        try await checker.call("DELETE", "/api/v1/devices/\(device)/tags/sports", tag, key: key, expect: 204)
        try await checker.call("DELETE", "/api/v1/devices/\(device)/tags/sports", tag, key: key, expect: 404)

        let tagged = "/api/v1/tags/{tag}/devices"
        try await checker.call("PUT", "/api/v1/devices/\(dead)/tags/vip", tag, key: key, expect: 204)
        let firstPage = try await checker.call("GET", "/api/v1/tags/vip/devices?limit=1", tagged, key: key, expect: 200)
        let cursor = try #require(firstPage["next_cursor"]?.stringValue)
        let lastPage = try await checker.call(
            "GET", "/api/v1/tags/vip/devices?limit=1&cursor=\(cursor)", tagged, key: key, expect: 200)
        #expect(lastPage["next_cursor"] == .null)
        try await checker.call("GET", "/api/v1/tags/vip/devices?limit=0", tagged, key: key, expect: 400)
        try await checker.call("GET", "/api/v1/tags/vip/devices?cursor=nonsense", tagged, key: key, expect: 400)
        try await checker.call("GET", "/api/v1/tags/vip/devices", tagged, expect: 401)

        let push: [String: Any] = [
            "audience": ["tokens": [device, dead]],
            "notification": [
                "alert": ["title": "订单", "body": "已发货"], "badge": 1, "sound": "default", "thread_id": "orders",
                "custom": ["order_id": 42],
            ],
            "push_type": "alert", "priority": 10, "collapse_id": "order-42", "environment": "production",
        ]
        try checker.request(push, "/api/v1/push", "post")
        let accepted = try await checker.call("POST", "/api/v1/push", "/api/v1/push", key: key, json: push, expect: 202)
        let messageID = try #require(accepted["message_id"]?.intValue)
        try await checker.call(
            "POST", "/api/v1/push", "/api/v1/push", key: key, json: ["audience": ["all": true]], expect: 400)
        try await checker.call(
            "POST", "/api/v1/push", "/api/v1/push", key: key, body: Data("{".utf8), contentType: "application/json",
            expect: 400)

        let message = "/api/v1/messages/{id}"
        try await waitUntil("message \(messageID) completed", every: .milliseconds(50)) {
            let status = try await checker.call("GET", "/api/v1/messages/\(messageID)", message, key: key, expect: 200)
            return status["state"]?.stringValue == "completed"
        }
        try await checker.call("GET", "/api/v1/messages/999999", message, key: key, expect: 404)
        let receipts = "/api/v1/receipts"
        let sent = try #require(gw.runtime.localMock?.receivedNotifications().first { $0.deviceToken == device })
        let receiptToken = try #require(try JSONValue(parsing: sent.payload)["tuisong_receipt"]?.stringValue)
        let receipt: [String: Any] = ["receipt": receiptToken, "event": "arrived"]
        try checker.request(receipt, receipts, "post")
        try await checker.call("POST", receipts, receipts, json: receipt, expect: 200)
        try await checker.call(
            "POST", receipts, receipts, json: ["receipt": receiptToken + "x", "event": "arrived"], expect: 401)
        try await checker.call(
            "POST", receipts, receipts, json: ["receipt": receiptToken, "event": "opened"], expect: 400)
        try await checker.call("GET", "/api/v1/messages/abc", message, key: key, expect: 400)
        let deliveries = "/api/v1/messages/{id}/deliveries"
        let failed = try await checker.call(
            "GET", "/api/v1/messages/\(messageID)/deliveries?state=failed", deliveries, key: key, expect: 200)
        #expect(failed["deliveries"]?.arrayValue?.count == 1)
        try await checker.call(
            "GET", "/api/v1/messages/\(messageID)/deliveries?state=lost", deliveries, key: key, expect: 400)
        try await checker.call("GET", "/api/v1/messages/999999/deliveries", deliveries, key: key, expect: 404)
        // Cancelling: a scheduled push is, a completed one is not (409), an unknown one 404.
        let later = Int(Date().timeIntervalSince1970) + 3600
        let scheduled = try await checker.call(
            "POST", "/api/v1/push", "/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "later"], "send_at": later], expect: 202)
        let scheduledID = try #require(scheduled["message_id"]?.intValue)
        try await checker.call("DELETE", "/api/v1/messages/\(scheduledID)", message, key: key, expect: 200)
        try await checker.call("DELETE", "/api/v1/messages/\(messageID)", message, key: key, expect: 409)
        try await checker.call("DELETE", "/api/v1/messages/999999", message, key: key, expect: 404)
        // The device APNs refused now shows `invalidated_at` and `invalid_reason`.
        let invalidated = try await checker.call("GET", "/api/v1/devices/\(dead)", path, key: key, expect: 200)
        #expect(invalidated["invalid_reason"]?.stringValue == "Unregistered")

        try await checker.call("DELETE", "/api/v1/devices/\(device)", path, key: key, expect: 204)
        try await checker.call("DELETE", "/api/v1/devices/\(device)", path, key: key, expect: 404)
        let hooks = "/api/v1/webhooks"
        let hook = "/api/v1/webhooks/{id}"
        let newHook: [String: Any] = [
            "url": "http://127.0.0.1:9/hook", "events": ["message.completed"], "description": "ops",
        ]
        try checker.request(newHook, hooks, "post")
        let created = try await checker.call("POST", hooks, hooks, key: key, json: newHook, expect: 201)
        let hookID = try #require(created["id"]?.intValue)
        try await checker.call("POST", hooks, hooks, key: key, json: ["url": "ftp://x/"], expect: 400)
        try await checker.call(
            "POST", hooks, hooks, key: key, json: ["url": "http://127.0.0.1:9/", "events": ["nope"]], expect: 400)
        try await checker.call("GET", hooks, hooks, key: key, expect: 200)
        try await checker.call("GET", hooks, hooks, expect: 401)
        try await checker.call("GET", "\(hooks)/\(hookID)", hook, key: key, expect: 200)
        try await checker.call("GET", "\(hooks)/999999", hook, key: key, expect: 404)
        try await checker.call("GET", "\(hooks)/abc", hook, key: key, expect: 400)
        try checker.request(["enabled": false], hook, "patch")
        try await checker.call("PATCH", "\(hooks)/\(hookID)", hook, key: key, json: ["enabled": false], expect: 200)
        try await checker.call(
            "POST", "\(hooks)/\(hookID)/rotate-secret", "/api/v1/webhooks/{id}/rotate-secret", key: key, expect: 200)
        try await checker.call("POST", "\(hooks)/\(hookID)/test", "/api/v1/webhooks/{id}/test", key: key, expect: 202)
        try await checker.call("DELETE", "\(hooks)/\(hookID)", hook, key: key, expect: 204)
        try await checker.call("DELETE", "\(hooks)/\(hookID)", hook, key: key, expect: 404)
        try await checker.call("GET", "/healthz", "/healthz", expect: 200)
        try await checker.call("GET", "/metrics", "/metrics", expect: 200)

        #expect(checker.uncalledOperations() == [])
        #expect(checker.failures() == [])
    }

    @Test func theValidatorRefusesWhatTheSchemaDoesNotAllow() throws {
        let spec = try OpenAPISpec(url: repositoryRoot().appending(path: "docs/openapi.json"))
        let device = try spec.schema(named: "Device")
        let good: JSONValue = .object([
            "id": .int(1), "token": .string("ab"), "channel": .string("apns"), "environment": .string("sandbox"),
            "user": .null,
            "locale": .string("en"), "created_at": .string("2026-11-21T08:00:00.000Z"),
            "updated_at": .string("2026-11-21T08:00:00.000Z"), "invalidated_at": .null,
        ])
        #expect(spec.validate(good, against: device) == [])
        var bad = good.objectValue!
        bad["environment"] = .string("staging")
        #expect(!spec.validate(.object(bad), against: device).isEmpty)
        bad = good.objectValue!
        bad.removeValue(forKey: "user")
        #expect(!spec.validate(.object(bad), against: device).isEmpty)
        bad = good.objectValue!
        bad["extra"] = .bool(true)
        #expect(!spec.validate(.object(bad), against: device).isEmpty)
        bad = good.objectValue!
        bad["id"] = .string("1")
        #expect(!spec.validate(.object(bad), against: device).isEmpty)
        bad = good.objectValue!
        bad["locale"] = .int(3)
        #expect(!spec.validate(.object(bad), against: device).isEmpty)
        // oneOf: exactly one audience shape.
        let audience = try spec.schema(named: "Audience")
        #expect(spec.validate(.object(["tag": .string("vip")]), against: audience) == [])
        #expect(!spec.validate(.object(["tag": .string("vip"), "all": .bool(true)]), against: audience).isEmpty)
        #expect(!spec.validate(.object(["all": .bool(false)]), against: audience).isEmpty)
    }
}

/// The parts of an OpenAPI 3.0 document the test needs, and a JSON Schema subset validator:
/// `$ref`, `type`, `nullable`, `enum`, `required`, `properties`, `additionalProperties`,
/// `items`, `oneOf`, `minimum`/`maximum`, `minLength`/`maxLength`, `minItems`/`maxItems`,
/// `format: date-time`. A keyword it does not know fails the validation, so the document
/// cannot claim more than is checked.
struct OpenAPISpec {
    let root: JSONValue

    init(url: URL) throws {
        root = try JSONDecoder().decode(JSONValue.self, from: Data(contentsOf: url))
    }

    func schema(named name: String) throws -> JSONValue {
        try #require(root["components"]?["schemas"]?[name])
    }

    func resolve(_ node: JSONValue) -> JSONValue {
        guard let reference = node["$ref"]?.stringValue else { return node }
        var target = root
        for part in reference.dropFirst(2).split(separator: "/") {
            guard let next = target[String(part)] else { return .null }
            target = next
        }
        return resolve(target)
    }

    static let known: Set<String> = [
        "$ref", "type", "nullable", "enum", "required", "properties", "additionalProperties", "items", "oneOf",
        "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "format", "description", "default",
    ]

    func validate(_ value: JSONValue, against schemaNode: JSONValue, at path: String = "$") -> [String] {
        let schema = resolve(schemaNode)
        guard let keywords = schema.objectValue else { return ["\(path): schema is not an object"] }
        if let unknown = keywords.keys.first(where: { !Self.known.contains($0) }) {
            return ["\(path): the validator does not know \(unknown)"]
        }
        if value == .null {
            if schema["nullable"]?.boolValue == true { return [] }
            if schema["type"] == nil && schema["oneOf"] == nil { return [] }
            return ["\(path): null is not allowed"]
        }
        var errors: [String] = []
        if let type = schema["type"]?.stringValue {
            let matches: Bool
            switch (type, value) {
            case ("object", .object), ("array", .array), ("string", .string), ("boolean", .bool), ("integer", .int),
                ("number", .int), ("number", .double):
                matches = true
            default: matches = false
            }
            guard matches else { return ["\(path): expected \(type), got \(value)"] }
        }
        if let options = schema["enum"]?.arrayValue, !options.contains(value) {
            errors.append("\(path): \(value) is not one of \(options)")
        }
        if let choices = schema["oneOf"]?.arrayValue {
            let matching = choices.filter { validate(value, against: $0, at: path).isEmpty }.count
            if matching != 1 { errors.append("\(path): matches \(matching) of oneOf's \(choices.count) schemas") }
        }
        if case .object(let members) = value {
            for name in schema["required"]?.arrayValue ?? [] {
                if let name = name.stringValue, members[name] == nil { errors.append("\(path): missing \(name)") }
            }
            let properties = schema["properties"]?.objectValue ?? [:]
            for (name, member) in members {
                if let property = properties[name] {
                    errors += validate(member, against: property, at: "\(path).\(name)")
                } else if let additional = schema["additionalProperties"] {
                    if additional == .bool(false) {
                        errors.append("\(path): unexpected property \(name)")
                    } else if additional != .bool(true) {
                        errors += validate(member, against: additional, at: "\(path).\(name)")
                    }
                }
            }
        }
        if case .array(let elements) = value {
            if let items = schema["items"] {
                for (index, element) in elements.enumerated() {
                    errors += validate(element, against: items, at: "\(path)[\(index)]")
                }
            }
            if let least = schema["minItems"]?.intValue, elements.count < Int(least) {
                errors.append("\(path): too few")
            }
            if let most = schema["maxItems"]?.intValue, elements.count > Int(most) {
                errors.append("\(path): too many")
            }
        }
        if case .string(let text) = value {
            if let least = schema["minLength"]?.intValue, text.count < Int(least) {
                errors.append("\(path): too short")
            }
            if let most = schema["maxLength"]?.intValue, text.count > Int(most) { errors.append("\(path): too long") }
            if schema["format"]?.stringValue == "date-time", (try? Self.dateTime.wholeMatch(in: text)) == nil {
                errors.append("\(path): \(text) is not a date-time")
            }
        }
        if let number = value.doubleValue {
            if let minimum = schema["minimum"]?.doubleValue, number < minimum { errors.append("\(path): < minimum") }
            if let maximum = schema["maximum"]?.doubleValue, number > maximum { errors.append("\(path): > maximum") }
        }
        return errors
    }

    nonisolated(unsafe) static let dateTime = #/\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})/#
}

/// Calls the gateway and checks each answer against the operation's documented responses.
final class ResponseChecker: @unchecked Sendable {
    // @unchecked: used from one test task at a time; `lock` guards the records anyway.
    let spec: OpenAPISpec
    let baseURL: String
    private let lock = NSLock()
    private var problems: [String] = []
    private var called: Set<String> = []

    init(spec: OpenAPISpec, baseURL: String) {
        self.spec = spec
        self.baseURL = baseURL
    }

    /// Checks a request body we send against the operation's documented request schema.
    func request(_ body: Any, _ template: String, _ method: String) throws {
        let operation = try #require(spec.root["paths"]?[template]?[method])
        let schema = try #require(operation["requestBody"]?["content"]?["application/json"]?["schema"])
        let value = try JSONDecoder().decode(JSONValue.self, from: JSONSerialization.data(withJSONObject: body))
        record(spec.validate(value, against: schema).map { "\(method.uppercased()) \(template) request: \($0)" })
    }

    @discardableResult
    func call(
        _ method: String, _ target: String, _ template: String, key: String? = nil, json: Any? = nil,
        body: Data? = nil, contentType: String? = nil, expect status: Int
    ) async throws -> JSONValue {
        let result = try await http(
            method, baseURL + target, key: key, json: json, body: body, contentType: contentType)
        let context = "\(method) \(target) → \(result.status)"
        #expect(result.status == status, "\(context): \(String(decoding: result.body, as: UTF8.self))")
        let lowered = method.lowercased()
        guard let operation = spec.root["paths"]?[template]?[lowered] else {
            if spec.root["paths"]?[template] != nil, result.status == 405 {
                // A method the path does not have: the router's 405, in the error envelope.
                return try checkBody(result, against: spec.root["components"]?["responses"]?["Error"], context)
            }
            record(["\(context): \(template) \(lowered) is not documented"])
            return .null
        }
        lock.withLock { _ = called.insert("\(lowered) \(template)") }
        let responses = operation["responses"]
        guard let documented = responses?[String(result.status)] ?? responses?["default"] else {
            record(["\(context): status not documented"])
            return .null
        }
        return try checkBody(result, against: documented, context)
    }

    private func checkBody(_ result: TestResponse, against responseNode: JSONValue?, _ context: String) throws
        -> JSONValue
    {
        let response = spec.resolve(responseNode ?? .null)
        guard let content = response["content"]?.objectValue, let (mediaType, media) = content.first else {
            if !result.body.isEmpty { record(["\(context): a body where none is documented"]) }
            return .null
        }
        let received = result.headers["content-type"] ?? ""
        let matches =
            mediaType == "application/json"
            ? received.split(separator: ";").first.map(String.init) == mediaType : received == mediaType
        if !matches { record(["\(context): Content-Type \(received), documented \(mediaType)"]) }
        guard mediaType == "application/json", let schema = media["schema"] else { return .null }
        let value: JSONValue
        do {
            value = try JSONDecoder().decode(JSONValue.self, from: Data(result.body))
        } catch {
            record(["\(context): body is not JSON"])
            return .null
        }
        record(spec.validate(value, against: schema).map { "\(context): \($0)" })
        return value
    }

    private func record(_ found: [String]) {
        guard !found.isEmpty else { return }
        lock.withLock { problems += found }
    }

    func failures() -> [String] { lock.withLock { problems } }

    func uncalledOperations() -> [String] {
        var all: [String] = []
        for (template, item) in spec.root["paths"]?.objectValue ?? [:] {
            for method in ["get", "put", "post", "delete", "patch"] where item[method] != nil {
                all.append("\(method) \(template)")
            }
        }
        return lock.withLock { all.filter { !called.contains($0) }.sorted() }
    }
}
