import Foundation
import Testing
import TuisongCore

@testable import JPushProvider

/// A schedule's trigger as JPush's schedule API page describes it: its pushes' times in
/// Beijing time, and refusals in JPush's schedule codes.
@Suite struct TriggerTests {
    static let now = Date(timeIntervalSince1970: 1_893_456_000)  // 2030-01-01 08:00 Beijing

    static func times(_ periodical: JSONValue) throws -> [String] {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = JPushTrigger.beijing
        formatter.dateFormat = "MM-dd HH:mm"
        return try JPushTrigger(["periodical": periodical]).occurrences(after: now).map(formatter.string(from:))
    }

    @Test func everyNDaysWeeksOnTheirWeekdaysAndMonthsOnTheirDays() throws {
        #expect(
            try Self.times([
                "start": "2030-01-01 00:00:00", "end": "2030-01-07 23:59:59", "time": "09:30:00", "time_unit": "DAY",
                "frequency": 2,
            ]) == ["01-01 09:30", "01-03 09:30", "01-05 09:30", "01-07 09:30"])
        // 2030-01-01 is a Tuesday: its week began on Monday 12-31; every other week.
        #expect(
            try Self.times([
                "start": "2030-01-01 00:00:00", "end": "2030-01-31 00:00:00", "time": "20:00:00", "time_unit": "week",
                "frequency": 2, "point": ["MON", "wed"],
            ]) == ["01-02 20:00", "01-14 20:00", "01-16 20:00", "01-28 20:00", "01-30 20:00"])
        // A day a month does not have is skipped; the start's own day only from its time on.
        #expect(
            try Self.times([
                "start": "2030-01-31 13:00:00", "end": "2030-04-30 23:00:00", "time": "12:00:00", "time_unit": "month",
                "frequency": 1, "point": ["31", "15"],
            ]) == ["02-15 12:00", "03-15 12:00", "03-31 12:00", "04-15 12:00"])
        // Times already past are not scheduled.
        #expect(
            try Self.times([
                "start": "2029-12-30 00:00:00", "end": "2030-01-02 23:00:00", "time": "07:00:00", "time_unit": "day",
                "frequency": 1,
            ]) == ["01-02 07:00"])
    }

    @Test func refusalsAreScheduleCodes() {
        func code(_ trigger: JSONValue) -> Int? {
            do {
                _ = try JPushTrigger(trigger).occurrences(after: Self.now)
                return nil
            } catch { return error.code }
        }
        let period: [String: JSONValue] = [
            "start": "2030-01-01 00:00:00", "end": "2030-03-01 00:00:00", "time": "12:00:00", "time_unit": "week",
            "frequency": 1, "point": ["WED"],
        ]
        #expect(code(["periodical": .object(period)]) == nil)
        var changed = period
        changed["point"] = ["WEDNESDAY"]
        #expect(code(["periodical": .object(changed)]) == 8400)
        changed = period
        changed["time_unit"] = "day"
        #expect(code(["periodical": .object(changed)]) == 8400, "a point with a day unit")
        changed = period
        changed["point"] = nil
        #expect(code(["periodical": .object(changed)]) == 8400)
        changed = period
        changed["end"] = "2029-12-01 00:00:00"
        #expect(code(["periodical": .object(changed)]) == 8400, "an end before its start")
        changed = period
        changed["frequency"] = 101
        #expect(code(["periodical": .object(changed)]) == 8400)
        changed = period
        changed["time"] = "25:00:00"
        #expect(code(["periodical": .object(changed)]) == 8400)
        changed = period
        changed["time_unit"] = "day"
        changed["point"] = nil
        changed["end"] = "2033-01-01 00:00:00"
        #expect(code(["periodical": .object(changed)]) == 8400, "more than 1,000 pushes")
        #expect(code(["single": ["time": "2029-01-01 00:00:00"]]) == 8400)
        #expect(code(["single": ["time": "tomorrow"]]) == 8400)
        #expect(code("soon") == 8400)
    }
}
