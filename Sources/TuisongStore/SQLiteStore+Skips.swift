import Foundation
import TuisongCore

// Skip reasons for the console's monitor, beside `failureReasons` (SQLiteStore+Console.swift).
extension SQLiteStore {
    public func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int] {
        try await reasonTotals(in: .skips, since: since, scanLimit: scanLimit)
    }
}
