import Foundation
import Synchronization
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TuisongPostgresStore
@testable import TuisongSQLStore
@testable import TuisongSQLiteStore
@testable import TuisongStore

@Suite("Point lookups on raw prepared statements")
struct PointReaderTests {
    @Test("A lookup sees each committed write at once, with tags, and nil for unknown devices")
    func seesCommittedWrites() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1)) == nil)

        let registered = try await store.registerDevice(
            appID: app.id,
            DeviceRegistration(
                token: token(1), environment: .sandbox, user: "小明", locale: "zh_CN",
                tags: [TagName("北京")!, TagName("vip")!], channel: .apns))
        let found = try #require(await store.deviceWithTags(appID: app.id, token: token(1)))
        #expect(found.device == registered.device)
        #expect(found.tags == ["vip", "北京"].sorted())
        #expect(try await store.device(appID: app.id, token: token(1)) == registered.device)
        #expect(try await store.device(id: registered.device.id) == registered.device)

        // The prepared statement is reused; the next lookup sees the next commit.
        _ = try await store.removeTag(appID: app.id, token: token(1), tag: TagName("vip")!)
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1))?.tags == ["北京"])
        _ = try await store.deleteDevice(appID: app.id, token: token(1))
        #expect(try await store.deviceWithTags(appID: app.id, token: token(1)) == nil)
        #expect(try await store.device(id: registered.device.id) == nil)
    }

    @Test("A write by another process's connection is visible to the next lookup")
    func seesOtherConnections() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        _ = try await fixture.store.deviceWithTags(appID: app.id, token: token(7))  // warm a reader
        let other = try SQLiteStore(path: fixture.database.path)
        _ = try await other.registerDevice(
            appID: app.id, DeviceRegistration(token: token(7), environment: .production, channel: .apns))
        try other.close()
        #expect(
            try await fixture.store.deviceWithTags(appID: app.id, token: token(7))?.device.environment == .production)
    }

    @Test("Lookups from many threads at once all answer correctly")
    func concurrentLookups() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        for n in 1...50 {
            _ = try await store.registerDevice(
                appID: app.id, DeviceRegistration(token: token(n), environment: .sandbox, channel: .apns))
        }
        let mismatches = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    var wrong = 0
                    for round in 0..<200 {
                        let n = (worker * 200 + round) % 60 + 1
                        let device = try await store.device(appID: app.id, token: token(n))
                        if (n <= 50) != (device?.token == token(n).hex) { wrong += 1 }
                    }
                    return wrong
                }
            }
            return try await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }

    @Test("A locked database never makes the calling thread wait: the lookup moves off it and waits there")
    func lockedDatabaseFallsBackOffThread() async throws {
        let fixture = try StoreFixture(.init(busyTimeout: 5))
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        _ = try await store.registerDevice(
            appID: app.id, DeviceRegistration(token: token(3), environment: .sandbox, channel: .apns))
        #expect(store.pointReaders.busyFallbacks == 0)

        // Another connection takes the database in exclusive locking mode: every other
        // connection's read gets SQLITE_BUSY until it closes.
        let holder = try LockHolder(path: fixture.database.path)
        // Released once the lookup has met the lock and moved off the caller's thread.
        let released = Atomic<Bool>(false)
        let releaser = Task {
            try await waitUntil("the lookup fell back") { store.pointReaders.busyFallbacks == 1 }
            released.store(true, ordering: .sequentiallyConsistent)
            holder.release()
        }
        let found = try await store.deviceWithTags(appID: app.id, token: token(3))
        #expect(found?.device.token == token(3).hex)
        let waitedForTheLock = released.load(ordering: .sequentiallyConsistent)
        #expect(waitedForTheLock, "it waited for the lock, off the caller's thread")
        #expect(store.pointReaders.busyFallbacks == 1)
        try await releaser.value

        // Unlocked again: back on the fast path.
        _ = try await store.deviceWithTags(appID: app.id, token: token(3))
        #expect(store.pointReaders.busyFallbacks == 1)
    }

    @Test("A quick read that meets a locked database moves off the calling thread, waits there and answers")
    func lockedQuickReadFallsBackOffThread() async throws {
        let fixture = try StoreFixture(.init(busyTimeout: 5))
        defer { fixture.tearDown() }
        let store = fixture.store
        let app = try await makeApp(store)
        let quick: @Sendable (any SQLExecutor) throws -> String? = { db in
            try db.queryOne("SELECT name FROM apps WHERE id = ?", [.integer(app.id)])?["name"].string
        }
        #expect(try await store.sharedDatabase.quickRead(quick) == app.name)
        #expect(store.pointReaders.busyFallbacks == 0)

        let holder = try LockHolder(path: fixture.database.path)
        let released = Atomic<Bool>(false)
        let releaser = Task {
            try await waitUntil("the quick read fell back") { store.pointReaders.busyFallbacks == 1 }
            released.store(true, ordering: .sequentiallyConsistent)
            holder.release()
        }
        #expect(try await store.sharedDatabase.quickRead(quick) == app.name)
        let waitedForTheLock = released.load(ordering: .sequentiallyConsistent)
        #expect(waitedForTheLock, "it waited for the lock, off the caller's thread")
        try await releaser.value

        // Unlocked again: on the calling thread, no fallback.
        #expect(try await store.sharedDatabase.quickRead(quick) == app.name)
        #expect(store.pointReaders.busyFallbacks == 1)
    }

    @Test("A lock held longer than the busy timeout fails the lookup as unavailable")
    func lockedBeyondTheBusyTimeout() async throws {
        let fixture = try StoreFixture(.init(busyTimeout: 0.2))
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        let holder = try LockHolder(path: fixture.database.path)
        defer { holder.release() }
        let error = await #expect(throws: StoreError.self) {
            try await fixture.store.device(appID: app.id, token: token(1))
        }
        #expect(error?.code == .unavailable)
    }

    @Test("After close, lookups fail as unavailable instead of reopening the file")
    func closedStore() async throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let app = try await makeApp(fixture.store)
        _ = try await fixture.store.deviceWithTags(appID: app.id, token: token(1))
        try fixture.store.close()
        let error = await #expect(throws: StoreError.self) {
            try await fixture.store.deviceWithTags(appID: app.id, token: token(1))
        }
        #expect(error?.code == .unavailable)
    }

    @Test("A failing statement reports SQLite's code and message")
    func errorsCarrySQLiteText() throws {
        let fixture = try StoreFixture()
        defer { fixture.tearDown() }
        let readers = PointReaders(path: fixture.database.path + "-missing", busyTimeout: 1)
        let error = #expect(throws: StoreError.self) {
            try readers.withConnection { _ in () }
        }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("SQLite error") == true)
    }
}

/// Another process in the middle of WAL recovery, as after a crash: it holds the WAL write and
/// recover locks of the shared-memory index (fcntl locks on bytes 120–122 of the `-shm` file)
/// and the index header's two copies disagree, so every reader must wait for the recovery and
/// gets SQLITE_BUSY(_RECOVERY) meanwhile. A process, not a connection of ours: POSIX locks never
/// conflict within one process. `release()` restores the header and lets go of the locks.
final class LockHolder: @unchecked Sendable {
    // @unchecked: `process` and `input` are only touched by init and the idempotent release.
    private let process = ChildProcess()
    private let input = Pipe()

    init(path: String) throws {
        process.executableURL = Python3.executable
        process.arguments = Python3.arguments([
            "-c",
            """
            import fcntl, os, sys
            fd = os.open(sys.argv[1] + "-shm", os.O_RDWR)
            fcntl.lockf(fd, fcntl.LOCK_EX, 3, 120)
            original = os.pread(fd, 1, 64)
            os.pwrite(fd, bytes([original[0] ^ 0xFF]), 64)
            print("locked", flush=True)
            sys.stdin.read()
            os.pwrite(fd, original, 64)
            """,
            path,
        ])
        let output = Pipe()
        process.standardInput = input
        process.standardOutput = output
        try process.run()
        let line = output.fileHandleForReading.availableData
        guard String(decoding: line, as: UTF8.self).hasPrefix("locked") else {
            process.terminate()
            throw StoreError(.unavailable, "the lock holder did not start")
        }
    }

    func release() {
        guard process.isRunning else { return }
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }
}
