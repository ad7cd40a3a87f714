import Foundation
import TuisongPostgres
import TuisongPostgresTestKit

/// Waits for `body`, failing after `limit` — a guard against a hang, not a measurement.
func within<T: Sendable>(_ limit: Duration = .seconds(60), _ body: @escaping @Sendable () async throws -> T)
    async throws -> T
{
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw TestFailure("gave up waiting after \(limit)")
        }
        return value
    }
}

/// Polls `condition` on `connection` until it holds (a server-side state change with no event
/// to wait on, such as a terminated backend leaving pg_stat_activity).
func waitUntil(_ connection: PostgresConnection, _ sql: String, _ parameters: [PostgresValue]) throws {
    for _ in 0..<6000 {
        if try connection.execute(sql, parameters).rows.first?[0].bool == true { return }
        usleep(10_000)
    }
    throw TestFailure("condition never held: \(sql)")
}

/// Terminates backend `pid` and waits until it has gone.
func terminate(_ pid: Int32, using admin: PostgresConnection) throws {
    try admin.execute("SELECT pg_terminate_backend($1::int)", [.int(Int64(pid))])
    try waitUntil(admin, "SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1::int)", [.int(Int64(pid))])
}
