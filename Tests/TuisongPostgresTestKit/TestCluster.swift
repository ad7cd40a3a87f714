import Foundation
import Synchronization
import TuisongPostgres

/// The cluster the tests run on: `TUISONG_TEST_DATABASE_URL` when set (`make test` starts one
/// with scripts/pg-test-cluster.sh and exports it), otherwise one this process starts with the
/// same script on first use and stops when it exits — so `swift test` by hand runs these tests
/// too, on any machine with Debian's `postgresql` installed.
public enum TestCluster {
    public static let url: Result<String, TestFailure> = {
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
    public static func url(_ base: String, database: String) -> String {
        let (beforeQuery, query) =
            base.firstIndex(of: "?").map { (String(base[..<$0]), String(base[$0...])) } ?? (base, "")
        guard let scheme = beforeQuery.range(of: "://") else { return base }
        let authorityAndPath = beforeQuery[scheme.upperBound...]
        let authority = authorityAndPath.firstIndex(of: "/").map { authorityAndPath[..<$0] } ?? authorityAndPath
        return beforeQuery[..<scheme.upperBound] + authority + "/" + database + query
    }
}

public struct TestFailure: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

private let databaseCounter = Atomic<Int>(0)

/// Runs `body` with the URL of a database created for it alone, dropped afterwards: empty, or a
/// copy of `template` (a name `TestTemplates.database` returned).
public func withTestDatabase<T>(template: String? = nil, _ body: (String) async throws -> T) async throws -> T {
    let base = try TestCluster.url.get()
    let name = "t_\(getpid())_\(databaseCounter.add(1, ordering: .relaxed).newValue)"
    try AdminConnections.execute(TestTemplates.createStatement(name, template: template))
    defer { AdminConnections.drop(name) }
    return try await body(TestCluster.url(base, database: name))
}

/// Connections to the cluster's `postgres` database for creating and dropping test databases,
/// kept open between tests: a new connection is a new server process (~10 ms of the server's
/// CPU to start and end), and the suite made two for each of its ~240 databases (issue #46).
/// A connection serves one statement at a time; one the server closed meanwhile (a test that
/// restarts the cluster) is replaced and the statement sent again.
enum AdminConnections {
    /// Runs `sql` on an idle admin connection, opening one when none is idle.
    static func execute(_ sql: String) throws {
        let base = try TestCluster.url.get()
        for attempt in 0..<2 {
            let connection = try idle.withLock { $0.popLast() } ?? Admin(try PostgresConnection(url: base))
            do {
                _ = try connection.connection.execute(sql)
                idle.withLock { $0.append(connection) }
                return
            } catch {
                // The statement's own error on a live connection: that connection stays. A
                // connection the server closed is dropped, and the statement tried once more.
                if connection.connection.isConnected {
                    idle.withLock { $0.append(connection) }
                    throw error
                }
                if attempt == 1 { throw error }
            }
        }
    }

    /// Drops `name` (every connection to it cut), quietly: a test's failure already says more.
    static func drop(_ name: String) {
        _ = try? execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    /// A connection moved between threads, used by one at a time (taken out of `idle` first).
    private final class Admin: @unchecked Sendable {
        let connection: PostgresConnection
        init(_ connection: PostgresConnection) { self.connection = connection }
    }

    private static let idle = Mutex<[Admin]>([])
}

/// Databases that hold a schema, made once per process and copied for each test that wants it
/// (`CREATE DATABASE … TEMPLATE`, a file copy in the server): migrating a new database ran every
/// core and plugin migration, hundreds of statements, for each of the suite's PostgreSQL tests
/// (issue #46). Per process, so a template never holds a schema an earlier build wrote; dropped
/// when the process exits.
public enum TestTemplates {
    /// The template database for `key`, made the first time this process asks for `key` by
    /// `build`, given its URL (which must leave no connection open to it: a template being
    /// used cannot be copied); callers asking for the same key meanwhile wait for it.
    public static func database(key: String, build: (String) throws -> Void) throws -> String {
        let slot = slots.withLock { slots in
            if let slot = slots[key] { return slot }
            let slot = Slot()
            slots[key] = slot
            return slot
        }
        return try slot.name.withLock { name in
            if let name { return name }
            let base = try TestCluster.url.get()
            let made = "tpl_\(getpid())_\(databaseCounter.add(1, ordering: .relaxed).newValue)"
            try AdminConnections.execute("CREATE DATABASE \(made)")
            do {
                try build(TestCluster.url(base, database: made))
            } catch {
                AdminConnections.drop(made)
                throw error
            }
            registerDropAtExit(made, base: base)
            name = made
            return made
        }
    }

    static func createStatement(_ name: String, template: String?) -> String {
        template.map { "CREATE DATABASE \(name) TEMPLATE \($0)" } ?? "CREATE DATABASE \(name)"
    }

    private final class Slot: Sendable {
        let name = Mutex<String?>(nil)
    }

    private static let slots = Mutex<[String: Slot]>([:])
    private static let madeTemplates = Mutex<(base: String, names: [String])?>(nil)

    private static func registerDropAtExit(_ name: String, base: String) {
        let first = madeTemplates.withLock { made in
            defer { made = (base, (made?.names ?? []) + [name]) }
            return made == nil
        }
        guard first else { return }
        atexit {
            guard let (base, names) = TestTemplates.madeTemplates.withLock({ $0 }),
                let admin = try? PostgresConnection(url: base)
            else { return }
            for name in names { _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
        }
    }
}

/// A database created for one test, for fixtures that outlive a closure: `drop()` removes it
/// (after every store on it was closed).
public struct TestDatabase: Sendable {
    public let url: String
    let name: String
    let base: String

    /// An empty database, or a copy of `template` (a name `TestTemplates.database` returned).
    public init(template: String? = nil) throws {
        base = try TestCluster.url.get()
        name = "t_\(getpid())_\(databaseCounter.add(1, ordering: .relaxed).newValue)"
        try AdminConnections.execute(TestTemplates.createStatement(name, template: template))
        url = TestCluster.url(base, database: name)
    }

    /// Runs a plain-SQL dump into this database as `psql -f` would, in one round trip: the
    /// statements of `pg_dump --inserts` (no `COPY … FROM stdin`); psql's own commands (lines
    /// starting with a backslash, such as pg_dump's `\restrict`) are left out.
    public func restore(dump: URL) throws {
        let text = try String(contentsOf: dump, encoding: .utf8)
        let statements = text.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("\\") }.joined(separator: "\n")
        let connection = try PostgresConnection(url: url)
        _ = try connection.execute(statements)
    }

    public func drop() { AdminConnections.drop(name) }
}
