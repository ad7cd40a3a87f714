import Foundation

/// Timestamps on the shared database: `INTEGER` milliseconds since 1970-01-01 UTC, as in every
/// core table (they compare, index and round-trip exactly). Plugins' tables follow it.
public enum SQLTime {
    public static func milliseconds(_ date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    public static func date(_ milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}

extension SQLValue {
    /// `date` as the shared database stores instants.
    public static func time(_ date: Date) -> SQLValue { .integer(SQLTime.milliseconds(date)) }
    /// The instant an integer column of milliseconds holds; nil for NULL.
    public var time: Date? { int.map(SQLTime.date) }
}
