import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongHarmony
@testable import TuisongVivo

/// Per-service options keyed by transport name (#29): `PushOptions.services`, stored with the
/// message as JSON, each entry read by its own transport; a row stored before them (HarmonyOS's
/// settings as `PushOptions.harmony`, in its Codable keys) still reads and renders the same.
@Suite struct ServiceOptionsTests {
    /// `PushOptions` as today's store rows hold it (JSONDecoder, as `JSONText.decode` reads a row).
    func stored(_ text: String) throws -> PushOptions {
        try JSONDecoder().decode(PushOptions.self, from: Data(text.utf8))
    }

    /// A row written by the code before #29: `harmony` at the top of the options, camelCase,
    /// every flag written out.
    static let oldRow = """
        {"collapseID":"c-1","harmony":{"badgeIncrement":true,"category":"IM","clickAction":"ChatAbility",\
        "ignoreBadge":false,"testMessage":true},"pushType":"alert"}
        """

    @Test func anOldRowIsReadIntoTheHarmonyEntryAndRendersAsANewOne() throws {
        let old = try stored(Self.oldRow)
        #expect(old.collapseID == "c-1" && old.pushType == .alert)
        let expected = HarmonyOptions(
            category: "IM", clickAction: "ChatAbility", badgeIncrement: true, testMessage: true)
        #expect(HarmonyOptions(old.services["harmony"]) == expected)
        // The same settings as a new row has them (the rule's normalised entry).
        let entry = try #require(
            try HarmonyOptions.rule.normalise(
                ["category": "IM", "click_action": "ChatAbility", "badge_increment": true, "test_message": true]))
        #expect(entry == expected.entry)
        let new = PushOptions(collapseID: "c-1", services: ["harmony": entry])
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let content = PushContent(title: "Hi", body: "鸿蒙", badge: 3)
        func rendered(_ options: PushOptions) -> String {
            let template = HarmonyMessage.Template(
                content: content, headers: PushHeaders(options), defaultCategory: nil, now: now)
            return String(decoding: template.body(tokens: ["t-1"]), as: UTF8.self)
        }
        #expect(rendered(old) == rendered(new))
        // A row from before `notify_id` has none, and none is sent.
        #expect(HarmonyOptions(old.services["harmony"]).notifyID == nil && !rendered(old).contains("notifyId"))
        let body = try JSONValue(parsing: rendered(old))
        #expect(body["payload"]?["notification"]?["category"] == "IM")
        #expect(body["payload"]?["notification"]?["clickAction"]?["action"] == "ChatAbility")
        #expect(body["payload"]?["notification"]?["badge"] == ["addNum": 3])
        #expect(body["pushOptions"]?["testMessage"] == true)
        // Written back, the entry sits under `services` and reads the same; an entry under
        // `services` wins over a leftover `harmony`.
        let rewritten = try stored(String(decoding: try JSONValue.encodedText(old), as: UTF8.self))
        #expect(rewritten == old)
        let written = try JSONValue(parsing: try JSONValue.encodedText(new))
        #expect(written.objectValue.map { Set($0.keys) } == ["collapseID", "pushType", "services"])
        let both = try stored(
            #"{"pushType":"alert","harmony":{"category":"WORK"},"services":{"harmony":{"category":"IM"}}}"#)
        #expect(HarmonyOptions(both.services["harmony"]).category == "IM")
    }

    @Test func optionsWithoutServicesAreStoredAsBefore() throws {
        let text = String(decoding: try JSONValue.encodedText(PushOptions(collapseID: "c")), as: UTF8.self)
        #expect(text == #"{"collapseID":"c","pushType":"alert"}"#)
        #expect(try stored(text).services.isEmpty)
        #expect(try stored(#"{"pushType":"alert","harmony":null}"#).services.isEmpty)
    }

    /// The rule: the documented keys only, each of its type; one sentence with the field.
    @Test func theHarmonyRuleRefusesInOneSentence() throws {
        func refusal(_ value: JSONValue) -> String? {
            do throws(ServiceOptionsError) {
                _ = try HarmonyOptions.rule.normalise(value)
                return nil
            } catch {
                return error.sentence(at: "harmony")
            }
        }
        #expect(refusal(["image": "http://x/a.png"]) == #""harmony.image" must be an https URL"#)
        #expect(refusal(["click_uri": ""]) == #""harmony.click_uri" must be a string of 1–2048 bytes"#)
        #expect(refusal(["badgeIncrement": true]) == #"unknown field "harmony.badgeIncrement""#)
        #expect(refusal("IM") == #""harmony" must be an object"#)
        #expect(try HarmonyOptions.rule.normalise(["ignore_badge": false]) == nil)
    }

    /// `notify_id`: Push Kit's `notifyId`, an Integer (32 bits), -1 for "one per message".
    @Test func theHarmonyRuleTakesANotifyIDPushKitCanTake() throws {
        for id: Int64 in [-1, 0, 7, 2_147_483_647] {
            let entry = try HarmonyOptions.rule.normalise(["notify_id": .int(id)])
            #expect(entry == ["notify_id": .int(id)], "\(id)")
            #expect(HarmonyOptions(entry).notifyID.map(Int64.init) == id)
        }
        // An integral double is the integer (JSON has one number type); stored as an integer.
        #expect(try HarmonyOptions.rule.normalise(["notify_id": 7.0]) == ["notify_id": 7])
        let sentence = #""harmony.notify_id" must be an integer from -1 to 2147483647"#
        for bad: JSONValue in [-2, 2_147_483_648, 7.5, "7", true, .null, ["id": 7]] {
            do throws(ServiceOptionsError) {
                _ = try HarmonyOptions.rule.normalise(["notify_id": bad])
                Issue.record("\(bad) taken")
            } catch {
                #expect(error.sentence(at: "harmony") == sentence, "\(bad)")
            }
        }
        // A stored entry outside the range (the rule never writes one) reads as none.
        #expect(HarmonyOptions(["notify_id": 2_147_483_648]).notifyID == nil)
        #expect(HarmonyOptions(["notify_id": "7"]).notifyID == nil)
    }

    /// The notification carries the id as `notifyId`; a background or badge-only push has no
    /// notification and sends none.
    @Test func aNotifyIDIsRenderedAsTheNotificationsNotifyId() throws {
        let headers = PushHeaders(PushOptions(services: ["harmony": ["notify_id": 7, "category": "IM"]]))
        func body(_ content: PushContent) -> String {
            let template = HarmonyMessage.Template(
                content: content, headers: headers, defaultCategory: nil, now: Date(timeIntervalSince1970: 0))
            return String(decoding: template.body(tokens: ["t-1"]), as: UTF8.self)
        }
        #expect(
            body(PushContent(title: "Hi", body: "鸿蒙", badge: 2))
                == #"{"payload":{"notification":{"badge":{"setNum":2},"body":"鸿蒙","category":"IM","#
                + #""clickAction":{"actionType":0},"notifyId":7,"title":"Hi"}},"target":{"token":["t-1"]}}"#)
        #expect(body(PushContent(badge: 4)) == #"{"payload":{"badge":{"setNum":4}},"target":{"token":["t-1"]}}"#)
        #expect(!body(PushContent(data: ["a": 1], background: true)).contains("notifyId"))
    }

    /// Issue #41: a push to a sandbox HarmonyOS device (a test phone) is a test message,
    /// whatever the message asked, and so goes 10 tokens a request; a production device gets
    /// one only when the message asks (`harmony.test_message`).
    @Test func aSandboxDeviceGetsATestMessage() throws {
        let service = HarmonyService()
        let credential = ChannelCredential(id: 1, channel: .harmony, vendorAppID: "101", clientID: "c", secret: [])
        func testMessage(_ options: PushOptions, _ environment: PushEnvironment) throws -> JSONValue? {
            let template = service.template(
                content: PushContent(title: "Hi", body: "鸿蒙"), headers: PushHeaders(options), environment: environment,
                credential: credential, now: Date(timeIntervalSince1970: 0))
            return try JSONValue(parsing: String(decoding: template.body(tokens: ["t-1"]), as: UTF8.self))[
                "pushOptions"]?["testMessage"]
        }
        let asked = PushOptions(services: ["harmony": ["test_message": true]])
        #expect(try testMessage(PushOptions(), .sandbox) == true)
        #expect(try testMessage(PushOptions(), .production) == nil)
        #expect(try testMessage(asked, .production) == true)
        #expect(service.maxTokens(headers: PushHeaders(PushOptions()), environment: .sandbox) == 10)
        #expect(service.maxTokens(headers: PushHeaders(PushOptions()), environment: .production) == 1000)
        #expect(service.maxTokens(headers: PushHeaders(asked), environment: .production) == 10)
    }

    /// A row as the code before vivo had an entry of its own wrote it: vivo's classification in
    /// the Android object, beside the shared settings.
    static let oldVivoRow = """
        {"android":{"category":{"vivo":"IM"},"channelIDs":{},"importance":{},"vivoClassification":1},\
        "pushType":"alert"}
        """

    @Test func anOldRowsVivoClassificationRendersAsTheVivoEntryDoes() throws {
        let old = try stored(Self.oldVivoRow)
        #expect(old.services.isEmpty && old.android?.category == ["vivo": "IM"])
        let entry = try #require(try VivoOptions.rule.normalise(["classification": 1]))
        let new = PushOptions(android: AndroidOptions(category: ["vivo": "IM"]), services: ["vivo": entry])
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let content = PushContent(title: "Hi", body: "vivo")
        func rendered(_ options: PushOptions) -> [String: JSONValue] {
            VivoMessage.fields(content: content, headers: PushHeaders(options), now: now)
        }
        #expect(rendered(old) == rendered(new))
        #expect(rendered(old)["classification"] == 1 && rendered(old)["category"] == "IM")
        #expect(rendered(PushOptions())["classification"] == 0, "vivo's default: an operation message")
        // Written back, the old row keeps its key and reads the same; the entry wins over it.
        let rewritten = try stored(String(decoding: try JSONValue.encodedText(old), as: UTF8.self))
        #expect(rewritten == old)
        #expect(String(decoding: try JSONValue.encodedText(old), as: UTF8.self) == Self.oldVivoRow)
        var both = old
        both.services["vivo"] = ["classification": 0]
        #expect(rendered(both)["classification"] == 0)
    }

    @Test func theVivoRuleTakesAClassificationOfZeroOrOne() throws {
        #expect(try VivoOptions.rule.normalise(["classification": 0]) == ["classification": 0])
        #expect(try VivoOptions.rule.normalise([:]) == nil)
        for bad: JSONValue in [["classification": 2], ["classification": "1"], ["colour": "red"], "vivo"] {
            #expect(throws: ServiceOptionsError.self, "\(bad)") { try VivoOptions.rule.normalise(bad) }
        }
    }
}
