import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import JPushProvider

/// The push object as JPush's push API page describes it, parsed into Tuisong's content and
/// options; refusals in JPush's codes.
@Suite struct PayloadTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    static func parse(_ json: String) throws -> JPushPush {
        try JPushPayload.parse(Array(json.utf8), now: now)
    }

    static func code(_ json: String) -> Int? {
        do {
            _ = try parse(json)
            return nil
        } catch let error as JPushError {
            return error.code
        } catch {
            return -1
        }
    }

    @Test func theDocumentsExampleBecomesOneContentPerPlatform() throws {
        let push = try Self.parse(
            """
            {"platform": "all", "audience": {"tag": ["深圳", "北京"]},
             "notification": {"alert": "Hello!",
               "android": {"alert": "Hi, JPush!", "title": "Send to Android", "builder_id": 1,
                           "intent": {"url": "intent:#Intent;component=com.x/.Main;end"}, "extras": {"newsid": 321}},
               "ios": {"alert": "Hi, JPush!", "sound": "default", "badge": "+1", "thread-id": "default",
                       "extras": {"newsid": 321}},
               "hmos": {"alert": "hmos alert", "title": "hmos title", "category": "IM", "test_message": true,
                        "intent": {"url": "scheme://test?key1=val1"}}},
             "message": {"msg_content": "Hi,JPush", "content_type": "text", "title": "msg", "extras": {"key": "value"}},
             "options": {"sendno": 18, "time_to_live": 60, "apns_production": false, "apns_collapse_id": "c1",
                         "third_party_channel": {"vivo": {"classification": 1, "category": "IM"},
                                                 "huawei": {"importance": "NORMAL", "channel_id": "chat"}}}}
            """)
        #expect(push.platforms == Set(JPushPlatform.allCases))
        #expect(push.audience.tags == ["深圳", "北京"] && push.audience.singleTag == nil)
        let android = try #require(push.contents[.android])
        #expect(android.title == "Send to Android" && android.body == "Hi, JPush!")
        #expect(android.click == .intent("intent:#Intent;component=com.x/.Main;end"))
        #expect(android.data["newsid"] == 321 && android.data["msg_content"] == "Hi,JPush")
        let ios = try #require(push.contents[.ios])
        #expect(ios.body == "Hi, JPush!" && ios.sound == "default" && ios.thread == "default")
        #expect(ios.badge == nil && push.iosBadge == .add(1), "a relative badge is applied per device")
        let hmos = try #require(push.contents[.hmos])
        #expect(hmos.title == "hmos title" && hmos.click == .url("scheme://test?key1=val1"))
        #expect(push.options.services["harmony"]?["category"] == "IM")
        #expect(push.options.services["harmony"]?["test_message"] == true)
        #expect(push.sendno == "18" && !push.apnsProduction)
        #expect(push.options.expiration == Self.now.addingTimeInterval(60))
        #expect(push.options.collapseID == "c1")
        #expect(push.options.services["vivo"] == ["classification": 1])
        #expect(push.options.android?.category["vivo"] == "IM")
        #expect(push.options.android?.importance["huawei"] == "NORMAL")
        #expect(push.options.android?.channelIDs["huawei"] == "chat")
    }

    @Test func aCommonAlertReachesEveryPlatformAndApnsProductionIsTheDefault() throws {
        let push = try Self.parse(
            #"{"platform": ["ios", "android"], "audience": "all", "notification": {"alert": "Hi"}}"#)
        #expect(push.platforms == [.ios, .android] && push.audience.all)
        #expect(push.contents[.ios]?.body == "Hi" && push.contents[.android]?.body == "Hi")
        #expect(push.contents[.hmos] == nil && push.apnsProduction && push.sendno == "0")
        let plan = JPushPlan(push: push)
        #expect(plan.contents.isEmpty, "one content for all: the message's own, no per-platform copy")
    }

    @Test func aCustomMessageAloneIsADataPush() throws {
        let push = try Self.parse(
            #"{"platform": "all", "audience": {"alias": ["bob"]}, "message": {"msg_content": "ping"}}"#)
        #expect(push.options.pushType == .background)
        #expect(push.contents.values.allSatisfy { $0.background && $0.data["msg_content"] == "ping" })
    }

    @Test func theIosAlertObjectAndFlags() throws {
        let push = try Self.parse(
            """
            {"platform": ["ios"], "audience": {"registration_id": ["1a0018970a8c4a5e2f4"]},
             "notification": {"ios": {"alert": {"title": "T", "subtitle": "S", "body": "B"}, "badge": 3,
               "mutable-content": true, "category": "c", "interruption-level": "time-sensitive"}}}
            """)
        let ios = try #require(push.contents[.ios])
        #expect(ios.title == "T" && ios.subtitle == "S" && ios.body == "B" && ios.badge == 3)
        #expect(ios.category == "c")
        #expect(ios.services["apns"]?["mutable_content"] == true)
        #expect(ios.services["apns"]?["interruption_level"] == "time-sensitive")
        #expect(push.audience.registrationIDs == ["1a0018970a8c4a5e2f4"])
    }

    @Test func theIosBadgeSetsOrMovesTheKeptBadge() throws {
        func badge(_ value: String) throws -> JPushBadge? {
            try Self.parse(
                #"{"platform": "all", "audience": "all", "notification": {"ios": {"alert": "x", "badge": \#(value)}}}"#
            ).iosBadge
        }
        #expect(try badge("3") == .set(3) && badge(#""7""#) == .set(7) && badge(#""""#) == .set(0))
        #expect(try badge(#""+1""#) == .add(1) && badge(#""-99""#) == .add(-99) && badge("null") == nil)
        for refused in [#""+100""#, #""+""#, #""1.5""#, #""x""#, "-1", "100000", "true", #""+-1""#] {
            #expect(throws: JPushError.self, "\(refused)") { try badge(refused) }
        }
        #expect(JPushBadge.add(-5).applied(to: 3) == 0 && JPushBadge.add(2).applied(to: 99_998) == 99_999)
        #expect(JPushBadge.set(4).applied(to: 10) == 4)
        // The plan carries it for the policy; a push without iOS does not.
        let push = try Self.parse(
            #"{"platform": ["android"], "audience": "all", "notification": {"alert": "x", "ios": {"badge": "+1"}}}"#)
        #expect(JPushPlan(push: push).iosBadge == nil)
        let ios = try Self.parse(
            #"{"platform": "all", "audience": "all", "notification": {"ios": {"alert": "x", "badge": "-2"}}}"#)
        let plan = try #require(JPushPlan.decoded(try JPushPlan(push: ios).encoded()))
        #expect(plan.iosBadge == .add(-2))
    }

    @Test func refusalsAreJPushCodes() {
        #expect(Self.code(#"{"audience": "all", "notification": {"alert": "x"}}"#) == 1002)
        #expect(Self.code(#"{"platform": "all", "notification": {"alert": "x"}}"#) == 1002)
        #expect(Self.code(#"{"platform": "all", "audience": "all"}"#) == 1002)
        #expect(Self.code(#"{"platform": ["winphone"], "audience": "all", "notification": {"alert": "x"}}"#) == 1003)
        #expect(
            Self.code(#"{"platform": "all", "audience": {"segment": ["s"]}, "notification": {"alert": "x"}}"#) == 1003)
        #expect(Self.code(#"{"platform": "all", "audience": {"tag": []}, "notification": {"alert": "x"}}"#) == 1003)
        #expect(
            Self.code(#"{"platform": "all", "audience": {"tag": ["a b"]}, "notification": {"alert": "x"}}"#) == 1003)
        #expect(Self.code(#"{"platform": "all", "audience": "all", "notification": {"alert": 5}}"#) == 1003)
        #expect(
            Self.code(
                #"{"platform": "all", "audience": "all", "notification": {"alert": "x"}, "options": {"sendno": -1}}"#)
                == 1003)
        #expect(Self.code("not json") == 1003)
        let tooMany = (0..<21).map { "\"t\($0)\"" }.joined(separator: ",")
        #expect(
            Self.code(#"{"platform": "all", "audience": {"tag": [\#(tooMany)]}, "notification": {"alert": "x"}}"#)
                == 1003)
    }

    @Test func thePolicySendsOnlyToNamedPlatformsAndTheNamedIosEnvironment() async throws {
        let push = try Self.parse(
            """
            {"platform": ["ios", "hmos"], "audience": "all", "options": {"apns_production": false},
             "notification": {"alert": "all", "hmos": {"alert": "harmony only"}}}
            """)
        let plan = JPushPlan(push: push)
        let record = MessageRecord.created(
            id: 1,
            job: PushJob(
                appID: 1, vendor: "jpush", audience: .all, content: plan.messageContent, options: push.options,
                vendorContext: try plan.encoded()),
            state: .sending, createdAt: Self.now)
        let recipients = [
            Recipient(deviceID: 1, token: "a", environment: .sandbox, channel: .apns),
            Recipient(deviceID: 2, token: "b", environment: .production, channel: .apns),
            Recipient(deviceID: 3, token: "c", environment: .production, channel: .fcm),
            Recipient(deviceID: 4, token: "d", environment: .production, channel: .harmony),
        ]
        let decisions = try await JPushDeliveryPolicy(jpushStore: nil).decide(recipients, message: record)
        #expect(decisions[0] == .send)
        #expect(decisions[1] == .skip(reason: "other_environment"))
        #expect(decisions[2] == .skip(reason: "platform"))
        guard case .sendContent(let content) = decisions[3] else {
            Issue.record("HarmonyOS gets its own alert")
            return
        }
        #expect(content.body == "harmony only")
    }
}
