import Foundation
import TuisongCore

/// A schedule's `trigger` (JPush's schedule API page, docs.jiguang.cn/jpush/server/push/
/// rest_api_push_schedule), in Beijing time: `single` `{"time": "yyyy-MM-dd HH:mm:ss"}`, or
/// `periodical` `{"start", "end", "time": "HH:mm:ss", "time_unit": "day" | "week" | "month",
/// "frequency": N, "point": […]}` — every N days, or every N weeks on the `point` weekdays
/// (`"MON"` … `"SUN"`), or every N months on the `point` days (`"01"` … `"31"`; a day a month
/// does not have is skipped), at `time`, from `start` to `end`.
enum JPushTrigger: Sendable, Hashable {
    case single(Date)
    case periodical(Period)

    struct Period: Sendable, Hashable {
        enum Unit: String, Sendable { case day, week, month }

        var start: Date
        var end: Date
        /// Seconds after midnight, Beijing time.
        var time: Int
        var unit: Unit
        var frequency: Int
        /// Weekdays (1 = Monday … 7 = Sunday) or days of the month; empty for `day`.
        var points: [Int]
    }

    /// A periodical schedule is one scheduled message per push: at most this many from now.
    static let occurrenceLimit = 1000

    static let beijing = TimeZone(identifier: "Asia/Shanghai")!

    init(_ trigger: JSONValue?) throws(JPushError) {
        guard case .object(let fields)? = trigger else { throw .scheduleInvalid("trigger must be an object") }
        if let periodical = fields["periodical"], periodical != .null {
            guard case .object(let period) = periodical else {
                throw .scheduleInvalid("trigger.periodical must be an object")
            }
            self = .periodical(try Self.period(period))
            return
        }
        guard case .object(let single)? = fields["single"], let text = single["time"]?.stringValue else {
            throw .scheduleInvalid("trigger.single.time is required (yyyy-MM-dd HH:mm:ss)")
        }
        self = .single(try Self.date(text, "trigger.single.time"))
    }

    /// When the schedule pushes after `now`, in order.
    func occurrences(after now: Date) throws(JPushError) -> [Date] {
        switch self {
        case .single(let date):
            guard date > now else { throw .scheduleInvalid("trigger.single.time is in the past") }
            return [date]
        case .periodical(let period):
            guard period.end > now else { throw .scheduleInvalid("trigger.periodical.end is in the past") }
            let dates = try period.dates(after: now)
            guard !dates.isEmpty else {
                throw .scheduleInvalid("trigger.periodical makes no push between now and its end")
            }
            return dates
        }
    }

    private static func period(_ fields: [String: JSONValue]) throws(JPushError) -> Period {
        guard let startText = fields["start"]?.stringValue, let endText = fields["end"]?.stringValue else {
            throw .scheduleInvalid("trigger.periodical.start and end are required (yyyy-MM-dd HH:mm:ss)")
        }
        let start = try date(startText, "trigger.periodical.start")
        let end = try date(endText, "trigger.periodical.end")
        guard end > start else { throw .scheduleInvalid("trigger.periodical.end must be after its start") }
        guard let timeText = fields["time"]?.stringValue, let time = secondsOfDay(timeText) else {
            throw .scheduleInvalid("trigger.periodical.time must be HH:mm:ss")
        }
        guard let unitText = fields["time_unit"]?.stringValue, let unit = Period.Unit(rawValue: unitText.lowercased())
        else { throw .scheduleInvalid("trigger.periodical.time_unit must be day, week or month") }
        guard let frequency = fields["frequency"]?.intValue, (1...100).contains(frequency) else {
            throw .scheduleInvalid("trigger.periodical.frequency must be 1–100")
        }
        var points: [Int] = []
        switch (unit, fields["point"]) {
        case (.day, nil), (.day, .null?): break
        case (.day, .array(let list)?) where list.isEmpty: break
        case (.day, _): throw .scheduleInvalid("trigger.periodical.point is not taken when time_unit is day")
        case (_, .array(let list)?) where !list.isEmpty:
            let weekdays = ["MON", "TUE", "WED", "THU", "FRI", "SAT", "SUN"]
            for item in list {
                guard let text = item.stringValue else {
                    throw .scheduleInvalid("trigger.periodical.point holds strings")
                }
                if unit == .week, let index = weekdays.firstIndex(of: text.uppercased()) {
                    points.append(index + 1)
                } else if unit == .month, text.count == 2, let day = Int(text), (1...31).contains(day) {
                    points.append(day)
                } else {
                    throw .scheduleInvalid(
                        unit == .week
                            ? "trigger.periodical.point takes MON … SUN when time_unit is week"
                            : "trigger.periodical.point takes \"01\" … \"31\" when time_unit is month")
                }
            }
        default: throw .scheduleInvalid("trigger.periodical.point is required when time_unit is week or month")
        }
        return Period(
            start: start, end: end, time: time, unit: unit, frequency: Int(frequency),
            points: Array(Set(points)).sorted())
    }

    private static func date(_ text: String, _ field: String) throws(JPushError) -> Date {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = beijing
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        guard let date = formatter.date(from: text) else {
            throw .scheduleInvalid("\(field) must be yyyy-MM-dd HH:mm:ss (Beijing time)")
        }
        return date
    }

    private static func secondsOfDay(_ text: String) -> Int? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 3, parts.allSatisfy({ $0.count == 2 }), let h = Int(parts[0]), let m = Int(parts[1]),
            let s = Int(parts[2]), (0..<24).contains(h), (0..<60).contains(m), (0..<60).contains(s)
        else { return nil }
        return h * 3600 + m * 60 + s
    }
}

extension JPushTrigger.Period {
    /// Every push of the period after `now`, in order; refused past `occurrenceLimit`.
    func dates(after now: Date) throws(JPushError) -> [Date] {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = JPushTrigger.beijing
        let firstDay = calendar.startOfDay(for: start)
        // The periods' first days: every `frequency` days, weeks (from the start's Monday) or
        // months (from the start's first day).
        let base: Date
        let step: DateComponents
        switch unit {
        case .day:
            base = firstDay
            step = DateComponents(day: frequency)
        case .week:
            let weekday = (calendar.component(.weekday, from: firstDay) + 5) % 7  // Monday = 0
            base = calendar.date(byAdding: .day, value: -weekday, to: firstDay)!
            step = DateComponents(day: 7 * frequency)
        case .month:
            base = calendar.date(from: calendar.dateComponents([.year, .month], from: firstDay))!
            step = DateComponents(month: frequency)
        }
        var dates: [Date] = []
        var periodStart = base
        var index = 0
        while periodStart <= end {
            let days: [Date]
            switch unit {
            case .day: days = [periodStart]
            case .week: days = points.map { calendar.date(byAdding: .day, value: $0 - 1, to: periodStart)! }
            case .month:
                let length = calendar.range(of: .day, in: .month, for: periodStart)?.count ?? 28
                days = points.filter { $0 <= length }.map {
                    calendar.date(byAdding: .day, value: $0 - 1, to: periodStart)!
                }
            }
            for day in days {
                let date = day.addingTimeInterval(TimeInterval(time))
                guard date >= start, date <= end, date > now else { continue }
                dates.append(date)
                if dates.count > JPushTrigger.occurrenceLimit {
                    throw .scheduleInvalid(
                        "trigger.periodical makes more than \(JPushTrigger.occurrenceLimit) pushes from now; "
                            + "shorten it or split it")
                }
            }
            index += 1
            var components = step
            components.day = step.day.map { $0 * index }
            components.month = step.month.map { $0 * index }
            periodStart = calendar.date(byAdding: components, to: base)!
        }
        return dates
    }
}
