import Foundation
import Testing
import TuisongCore

@testable import EasemobProvider

/// Seed 004's receiver rules as pure decisions: mode precedence, mentions, every kind of
/// do-not-disturb (in the app's time zone), force and ignore flags, the sender.
@Suite struct PushRulesTests {
    let utc8 = TimeZone(secondsFromGMT: 8 * 3600)!

    /// 2026-11-22 at `hour:minute` in UTC+8.
    func at(_ hour: Int, _ minute: Int = 0, zone: TimeZone? = nil) -> Date {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone ?? utc8
        return calendar.date(from: DateComponents(year: 2026, month: 11, day: 22, hour: hour, minute: minute))!
    }

    func decide(
        _ receiver: EasemobReceiverRules, from: String = "alice", ext: JSONValue? = nil, now: Date? = nil,
        zone: TimeZone? = nil
    ) -> EasemobSkipReason? {
        EasemobPushRules.skipReason(
            receiver: receiver, message: EasemobMessageRules(from: from, ext: ext), now: now ?? at(12),
            timeZone: zone ?? utc8)
    }

    func bob(
        app: EasemobNotificationSetting? = nil, conversation: EasemobNotificationSetting? = nil,
        legacy: EasemobLegacyDoNotDisturb? = nil
    ) -> EasemobReceiverRules {
        EasemobReceiverRules(username: "bob", appLevel: app, conversation: conversation, legacy: legacy)
    }

    @Test func unsetSettingsPushEverything() {
        #expect(decide(bob()) == nil)
        #expect(EasemobPushRules.effectiveMode(bob()) == .all)
    }

    @Test func conversationModeBeatsAppModeAndDefaultInherits() {
        let appNone = EasemobNotificationSetting(mode: .none)
        #expect(decide(bob(app: appNone)) == .modeNone)
        #expect(decide(bob(app: appNone, conversation: .init(mode: .all))) == nil)
        #expect(decide(bob(app: appNone, conversation: .init(mode: .default))) == .modeNone)
        #expect(decide(bob(app: .init(mode: .all), conversation: .init(mode: .none))) == .modeNone)
        // Seed 004's example: app MentionOnly, one conversation All.
        let appAt = EasemobNotificationSetting(mode: .at)
        #expect(decide(bob(app: appAt, conversation: .init(mode: .all))) == nil)
        #expect(decide(bob(app: appAt)) == .notMentioned)
    }

    @Test func mentionOnlyPushesWhenNamedOrAll() {
        let atOnly = bob(app: .init(mode: .at))
        #expect(decide(atOnly, ext: ["em_at_list": ["carol"]]) == .notMentioned)
        #expect(decide(atOnly, ext: ["em_at_list": ["carol", "Bob"]]) == nil)
        #expect(decide(atOnly, ext: ["em_at_list": "all"]) == nil)
        #expect(decide(atOnly, ext: ["em_at_list": "ALL"]) == nil)
        #expect(decide(atOnly, ext: ["other": 1]) == .notMentioned)
    }

    @Test func ignoreDurationAtAppOrConversationLevel() {
        let now = at(12)
        let later = now.addingTimeInterval(60)
        let earlier = now.addingTimeInterval(-1)
        #expect(decide(bob(app: .init(ignoreUntil: later)), now: now) == .dnd)
        #expect(decide(bob(conversation: .init(ignoreUntil: later)), now: now) == .dnd)
        #expect(decide(bob(app: .init(ignoreUntil: earlier)), now: now) == nil)
        // Do-not-disturb beats every mode, ALL included.
        #expect(decide(bob(app: .init(ignoreUntil: later), conversation: .init(mode: .all)), now: now) == .dnd)
    }

    @Test func dailyIntervalWrapsPastMidnightInTheAppTimeZone() throws {
        let interval = try #require(EasemobDailyInterval(parsing: "22:30-07:00"))
        let receiver = bob(app: .init(ignoreInterval: interval))
        #expect(decide(receiver, now: at(23)) == .dnd)
        #expect(decide(receiver, now: at(22, 30)) == .dnd)
        #expect(decide(receiver, now: at(0, 15)) == .dnd)
        #expect(decide(receiver, now: at(6, 59)) == .dnd)
        #expect(decide(receiver, now: at(7, 0)) == nil)  // end is exclusive
        #expect(decide(receiver, now: at(22, 29)) == nil)
        #expect(decide(receiver, now: at(12)) == nil)
        // 23:00 in UTC+8 is 15:00 UTC: outside the interval read in UTC.
        #expect(decide(receiver, now: at(23), zone: TimeZone(secondsFromGMT: 0)!) == nil)
        // 16:00 UTC is 00:00 in UTC+8: inside.
        #expect(decide(receiver, now: at(16, zone: TimeZone(secondsFromGMT: 0)!)) == .dnd)
    }

    @Test func intervalWithoutWrapAndAllDay() throws {
        let morningInterval: EasemobDailyInterval = try #require(EasemobDailyInterval(parsing: "08:30-10:00"))
        let morning = bob(app: .init(ignoreInterval: morningInterval))
        #expect(decide(morning, now: at(8, 30)) == .dnd)
        #expect(decide(morning, now: at(9, 59)) == .dnd)
        #expect(decide(morning, now: at(10)) == nil)
        #expect(decide(morning, now: at(8, 29)) == nil)
        let allDayInterval: EasemobDailyInterval = try #require(EasemobDailyInterval(parsing: "09:00-09:00"))
        let allDay = bob(app: .init(ignoreInterval: allDayInterval))
        #expect(decide(allDay, now: at(3)) == .dnd)
    }

    @Test func conversationIntervalIsIgnored() throws {
        // Easemob: daily intervals apply at the app level only.
        let interval = try #require(EasemobDailyInterval(parsing: "00:00-23:59"))
        #expect(decide(bob(conversation: .init(ignoreInterval: interval)), now: at(12)) == nil)
    }

    @Test func legacyHours() {
        let night = EasemobLegacyDoNotDisturb(enabled: true, startHour: 22, endHour: 8)
        #expect(decide(bob(legacy: night), now: at(23)) == .dnd)
        #expect(decide(bob(legacy: night), now: at(7, 59)) == .dnd)
        #expect(decide(bob(legacy: night), now: at(8)) == nil)
        let off = EasemobLegacyDoNotDisturb(enabled: false, startHour: 0, endHour: 23)
        #expect(decide(bob(legacy: off), now: at(12)) == nil)
        let allDay = EasemobLegacyDoNotDisturb(enabled: true, startHour: nil, endHour: nil)
        #expect(decide(bob(legacy: allDay), now: at(12)) == .dnd)
    }

    @Test func forceBeatsDoNotDisturbButNotTheMode() {
        let receiver = bob(app: .init(ignoreUntil: at(13)))
        #expect(decide(receiver, ext: ["em_force_notification": true]) == nil)
        #expect(decide(receiver, ext: ["em_force_notification": "true"]) == nil)
        #expect(decide(receiver, ext: ["em_force_notification": false]) == .dnd)
        let none = bob(app: .init(mode: .none, ignoreUntil: at(13)))
        #expect(decide(none, ext: ["em_force_notification": true]) == .modeNone)
    }

    @Test func ignoreAndSenderAlwaysWin() {
        #expect(decide(bob(), ext: ["em_ignore_notification": true]) == .ignored)
        #expect(decide(bob(), ext: ["em_ignore_notification": true, "em_force_notification": true]) == .ignored)
        #expect(decide(bob(), from: "bob", ext: ["em_force_notification": true]) == .sender)
        let command = EasemobMessageRules(from: "alice", ext: nil, isCommand: true)
        #expect(EasemobPushRules.skipReason(receiver: bob(), message: command, now: at(12), timeZone: utc8) == .ignored)
    }

    @Test func intervalParsing() {
        #expect(EasemobDailyInterval(parsing: "21:30-08:00")?.description == "21:30-08:00")
        #expect(EasemobDailyInterval(parsing: "8:5-9:00")?.description == "08:05-09:00")
        for bad in [
            "", "24:00-01:00", "10:60-11:00", "10:00", "10:00-", "ab:cd-01:00", "10:00-11:00-12:00", "-1:00-2:00",
        ] {
            #expect(EasemobDailyInterval(parsing: bad) == nil, "\(bad)")
        }
    }

    @Test func minuteOfDayHandlesNegativeOffsetsAndDaylightZones() {
        let minusFive = TimeZone(secondsFromGMT: -5 * 3600)!
        // 03:00 UTC is 22:00 the day before in UTC-5.
        let date = at(3, zone: TimeZone(secondsFromGMT: 0)!)
        #expect(EasemobPushRules.minuteOfDay(date, in: minusFive) == 22 * 60)
        if let newYork = TimeZone(identifier: "America/New_York") {
            // 2026-07-01 12:00 UTC is 08:00 EDT (UTC-4).
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(secondsFromGMT: 0)!
            let summer = calendar.date(from: DateComponents(year: 2026, month: 7, day: 1, hour: 12))!
            #expect(EasemobPushRules.minuteOfDay(summer, in: newYork) == 8 * 60)
        }
    }
}
