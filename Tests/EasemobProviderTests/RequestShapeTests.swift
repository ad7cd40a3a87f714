import Foundation
import Testing
import TuisongCore
import TuisongHTTP
import TuisongPlugin
import TuisongPluginTestKit

@testable import EasemobProvider

/// Easemob's request and response shapes: body leniency, usernames, the envelope, the error
/// body, the router's errors in Easemob's words, settings declarations and time zones.
@Suite struct RequestShapeTests {
    @Test func bodiesAreReadWhateverTheContentType() throws {
        #expect(try EasemobBody([]).value == .object([:]))
        #expect(try EasemobBody(Array(" \n".utf8)).value == .object([:]))
        let object = try EasemobBody(Array(#"{"ttl":"1024000","n":2,"flag":"true","list":["a",12]}"#.utf8)).object()
        #expect(try object.integer("ttl") == 1_024_000)
        #expect(try object.string("n") == "2")
        #expect(try object.bool("flag") == true)
        #expect(try object.strings("list") == ["a", "12"])
        #expect(try object.string("missing") == nil)
        let parse = #expect(throws: EasemobError.self) { try EasemobBody(Array(#"{"a"=1}"#.utf8)) }
        #expect(parse?.status == 400 && parse?.error == "json_parse")
        let shape = #expect(throws: EasemobError.self) { try object.integer("list") }
        #expect(shape?.error == "illegal_argument" && shape?.errorDescription.contains("list") == true)
        #expect(throws: EasemobError.self) { try EasemobBody(Array("[1]".utf8)).object() }
    }

    @Test func usernames() throws {
        #expect(try EasemobUsername.validated("User_1.a-b") == "user_1.a-b")
        for bad in ["", "a b", "名字", String(repeating: "a", count: 65), "a/b"] {
            let error = #expect(throws: EasemobError.self) { try EasemobUsername.validated(bad) }
            #expect(error?.error == "illegal_argument")
        }
    }

    @Test func envelopeCarriesEveryField() throws {
        let request = try Request(
            method: .GET, target: "/acme/chat/users/bob?x=1", headers: ["Host": "im.example.com:8080"])
        let call = EasemobCall(org: "acme", appName: "chat", appID: 3, request: request, resourcePath: "/users")
        let now = Date(timeIntervalSince1970: 1_542_596_083.685)
        let response = EasemobReply.success(call, now: now, entities: [["username": "bob"]], extra: ["count": 1])
        #expect(response.status == 200)
        let body = try JSONValue(parsing: response.body)
        #expect(body["action"] == "get")
        #expect(body["application"] == .string(EasemobIDs.applicationUUID(appID: 3)))
        #expect(body["path"] == "/users")
        #expect(body["uri"] == "http://im.example.com:8080/acme/chat/users/bob")
        #expect(body["timestamp"] == 1_542_596_083_685)
        #expect(body["duration"]?.intValue != nil)
        #expect(body["organization"] == "acme" && body["applicationName"] == "chat")
        #expect(body["entities"] == [["username": "bob"]] && body["count"] == 1)
        #expect(body["data"] == nil)
        // The application UUID is stable and shaped like a UUID.
        let uuid = EasemobIDs.applicationUUID(appID: 3)
        #expect(uuid == EasemobIDs.applicationUUID(appID: 3) && uuid != EasemobIDs.applicationUUID(appID: 4))
        #expect(uuid.split(separator: "-").map(\.count) == [8, 4, 4, 4, 12])
    }

    @Test func errorBodyAndRouterErrors() throws {
        let response = EasemobReply.failure(.unauthorized("Unable to authenticate"))
        #expect(response.status == 401)
        let body = try JSONValue(parsing: response.body)
        #expect(body["error"] == "unauthorized" && body["error_description"] == "Unable to authenticate")
        let request = try Request(method: .GET, target: "/a/b/nothing")
        let cases: [(HTTPError, Int, String)] = [
            (.notFound(), 404, "service_resource_not_found"),
            (.methodNotAllowed(allow: [.GET], method: .PATCH), 405, "unsupported_service_operation"),
            (.payloadTooLarge(limit: 5), 413, "Request Entity Too Large"),
            (HTTPError(status: 429, code: "too_many", message: "slow down"), 429, "reach_limit"),
            (.badRequest("bad"), 400, "illegal_argument"),
        ]
        for (error, status, code) in cases {
            let rendered = EasemobReply.errorResponder(error, request)
            #expect(rendered.status == status)
            #expect(try JSONValue(parsing: rendered.body)["error"] == .string(code))
        }
    }

    @Test func settingsDeclarations() throws {
        let keys = EasemobAppSettings.declarations.map(\.key)
        #expect(keys == ["org", "app_name", "client_id", "client_secret", "time_zone"])
        let byKey = Dictionary(uniqueKeysWithValues: EasemobAppSettings.declarations.map { ($0.key, $0) })
        #expect(byKey["app_name"]?.cliFlag == "app-name")
        #expect(byKey["client_secret"]?.isSecret == true && byKey["client_secret"]?.cliFlag == "client-secret")
        #expect(byKey["client_secret"]?.storageKey == "client_secret_sealed")
        #expect(byKey["time_zone"]?.isRequired == false && byKey["time_zone"]?.defaultValue == "+08:00")
        #expect(byKey["org"]?.problem("acme-1") == nil && byKey["org"]?.problem("a b") != nil)
        #expect(byKey["time_zone"]?.problem("+05:30") == nil && byKey["time_zone"]?.problem("mars") != nil)
    }

    @Test func timeZones() {
        #expect(EasemobAppSettings.parseTimeZone("+08:00")?.secondsFromGMT() == 8 * 3600)
        #expect(EasemobAppSettings.parseTimeZone("-05:30")?.secondsFromGMT() == -(5 * 3600 + 1800))
        #expect(EasemobAppSettings.parseTimeZone("UTC+8")?.secondsFromGMT() == 8 * 3600)
        #expect(EasemobAppSettings.parseTimeZone("UTC")?.secondsFromGMT() == 0)
        #expect(EasemobAppSettings.parseTimeZone("Asia/Shanghai") != nil)
        for bad in ["", "+25:00", "+08:60", "8", "mars", "Mars/Base"] {
            #expect(EasemobAppSettings.parseTimeZone(bad) == nil, "\(bad)")
        }
    }

    @Test func settingsRoundTripThroughTheSealer() throws {
        let sealer = try TestSealer()
        let settings = EasemobAppSettings(
            org: "acme", appName: "chat", clientID: "YXA6id", clientSecret: "YXA6secret",
            timeZone: TimeZone(secondsFromGMT: 0)!)
        let stored = try settings.stored(appID: 5, sealer: sealer, timeZoneText: "UTC")
        #expect(stored["client_secret"] == nil && stored["client_secret_sealed"] != nil)
        let app = App(
            id: 5, name: "a", bundleID: "com.example", apiKeyHash: "h", createdAt: Date(), updatedAt: Date(),
            vendorSettings: ["easemob": stored])
        // Read back with the rotation of the secret it was stored under: its sealed form.
        var expected = settings
        expected.clientSecretRotation = try #require(stored["client_secret_sealed"])
        #expect(try EasemobAppSettings.of(app, sealer: sealer) == expected)
        #expect(EasemobAppSettings.pair(of: app) == EasemobPair(org: "ACME", appName: "Chat"))
        // Sealed for app 5, the secret does not open as app 6's.
        var moved = app
        moved.id = 6
        #expect(throws: (any Error).self) { try EasemobAppSettings.of(moved, sealer: sealer) }
        // No time zone stored: the default UTC+8.
        var bare = app
        bare.vendorSettings["easemob"]?["time_zone"] = nil
        #expect(try EasemobAppSettings.of(bare, sealer: sealer)?.timeZone.secondsFromGMT() == 8 * 3600)
    }
}
