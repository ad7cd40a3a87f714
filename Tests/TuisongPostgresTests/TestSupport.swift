import Foundation
import Synchronization
import TuisongPostgres

/// The cluster the tests run on: `TUISONG_TEST_DATABASE_URL` when set (`make test` starts one
/// with scripts/pg-test-cluster.sh and exports it), otherwise one this process starts with the
/// same script on first use and stops when it exits — so `swift test` by hand runs these tests
/// too, on any machine with Debian's `postgresql` installed.
enum TestCluster {
    static let url: Result<String, TestFailure> = {
        if let url = ProcessInfo.processInfo.environment["TUISONG_TEST_DATABASE_URL"], !url.isEmpty {
            return .success(url)
        }
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/pg-test-cluster.sh").path
        // popen, not Foundation's Process: its waitUntilExit never returned here (inside a
        // swift_once on a cooperative thread).
        guard let pipe = popen("/bin/bash '\(script)' start </dev/null", "r") else {
            return .failure(TestFailure("cannot run \(script)"))
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, pipe)
            if count <= 0 { break }
            output += buffer[..<count]
        }
        let status = pclose(pipe)
        let url = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard status == 0, url.hasPrefix("postgresql://") else {
            return .failure(TestFailure("\(script) start failed (is postgresql installed?)"))
        }
        startedCluster.withLock { $0 = (script, url) }
        atexit {
            guard let (script, url) = startedCluster.withLock({ $0 }) else { return }
            _ = system("/bin/bash '\(script)' stop '\(url)' </dev/null")
        }
        return .success(url)
    }()

    private static let startedCluster = Mutex<(String, String)?>(nil)

    /// `base` with its database name replaced: `postgresql:///postgres?host=…` → `postgresql:///t_1?host=…`.
    static func url(_ base: String, database: String) -> String {
        let (beforeQuery, query) =
            base.firstIndex(of: "?").map { (String(base[..<$0]), String(base[$0...])) } ?? (base, "")
        guard let scheme = beforeQuery.range(of: "://") else { return base }
        let authorityAndPath = beforeQuery[scheme.upperBound...]
        let authority = authorityAndPath.firstIndex(of: "/").map { authorityAndPath[..<$0] } ?? authorityAndPath
        return beforeQuery[..<scheme.upperBound] + authority + "/" + database + query
    }
}

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

private let databaseCounter = Atomic<Int>(0)

/// Runs `body` with the URL of a database created for it alone, dropped afterwards.
func withTestDatabase<T>(_ body: (String) async throws -> T) async throws -> T {
    let base = try TestCluster.url.get()
    let name = "t_\(getpid())_\(databaseCounter.add(1, ordering: .relaxed).newValue)"
    let admin = try PostgresConnection(url: base)
    try admin.execute("CREATE DATABASE \(name)")
    defer { _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    return try await body(TestCluster.url(base, database: name))
}

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
