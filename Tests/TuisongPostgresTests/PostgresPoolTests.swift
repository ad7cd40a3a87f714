import Dispatch
import Synchronization
import Testing
import TuisongPostgres
import TuisongPostgresTestKit

@Suite struct PostgresPoolTests {
    @Test func moreTasksThanConnectionsAllRun() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 3)
            try await pool.withConnection { try $0.execute("CREATE TABLE hits (task int PRIMARY KEY, backend int)") }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<40 {
                    group.addTask {
                        _ = try await pool.withConnection { conn in
                            try conn.execute(
                                "INSERT INTO hits VALUES ($1, pg_backend_pid())", [.int(Int64(task))])
                        }
                    }
                }
                try await group.waitForAll()
            }
            let summary = try await pool.withConnection {
                try $0.execute("SELECT count(*), count(DISTINCT backend) FROM hits").rows[0]
            }
            #expect(summary[0] == .int(40))
            #expect((summary[1].int64 ?? 0) <= 3)
            #expect(pool.statistics.connectionsOpened <= 3)
            #expect(pool.statistics.connectionsReplaced == 0)
            await pool.shutdown()
            await #expect(throws: PostgresError.self) { try await pool.withConnection { _ in 1 } }
        }
    }

    @Test func oneAtATimeKeepsToOneConnectionAndTogetherOpensMore() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 4)
            var backends: Set<Int32> = []
            for _ in 0..<20 { backends.insert(try await pool.withConnection { $0.backendPID }) }
            // Before, each job woke whichever worker the semaphore picked: all four opened one.
            #expect(backends.count == 1)
            #expect(pool.statistics.connectionsOpened == 1)

            // Four held at once: four workers, four connections.
            let holding = HoldCount()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        try await pool.withConnection { connection in
                            holding.value.add(1, ordering: .relaxed)
                            // Each waits (bounded) until all four hold a connection.
                            for _ in 0..<500 where holding.value.load(ordering: .relaxed) < 4 {
                                _ = try connection.execute("SELECT pg_sleep(0.01)")
                            }
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(holding.value.load(ordering: .relaxed) == 4)
            #expect(pool.statistics.connectionsOpened == 4)
            await pool.shutdown()
        }
    }

    @Test func aKilledConnectionIsReplacedOnCheckout() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 1)
            let admin = try PostgresConnection(url: url)
            let first = try await pool.withConnection { $0.backendPID }
            try terminate(first, using: admin)
            let second = try await pool.withConnection { conn in
                try conn.execute("SELECT pg_backend_pid()").rows[0][0].int64
            }
            #expect(second != nil && second != Int64(first))
            #expect(pool.statistics.connectionsReplaced == 1)
            #expect(pool.statistics.connectionsOpened == 2)
            await pool.shutdown()
        }
    }

    /// The pool's session settings hold on every connection it opens, a replacement included,
    /// and survive a transaction's rollback (they are the session's, not a transaction's).
    @Test func sessionSettingsApplyToEveryConnectionItOpens() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(
                url: url, size: 1, idleInTransactionTimeout: .milliseconds(1500),
                settings: [("jit", "off"), ("application_name", "pool-test")])
            let admin = try PostgresConnection(url: url)
            let query = """
                SELECT current_setting('jit'), current_setting('application_name'),
                    current_setting('idle_in_transaction_session_timeout'), pg_backend_pid()
                """
            let first = try await pool.withConnection { try $0.execute(query).rows[0] }
            #expect(first[0].string == "off" && first[1].string == "pool-test" && first[2].string == "1500ms")
            try? await pool.transaction { conn -> Void in
                try conn.execute("SET LOCAL jit = on")
                throw TestFailure("roll back")
            }
            try terminate(Int32(first[3].int64 ?? 0), using: admin)
            let second = try await pool.withConnection { try $0.execute(query).rows[0] }
            #expect(second[3] != first[3])
            #expect(second[0].string == "off" && second[1].string == "pool-test" && second[2].string == "1500ms")
            #expect(pool.statistics.connectionsOpened == 2)
            await pool.shutdown()
        }
    }

    @Test func transactionRollsBackOnThrowAndLeavesNothingOpen() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 1)
            try await pool.withConnection { try $0.execute("CREATE TABLE t (id int)") }
            await #expect(throws: TestFailure.self) {
                try await pool.transaction { conn in
                    try conn.execute("INSERT INTO t VALUES (1)")
                    throw TestFailure("abandon")
                }
            }
            // A closure that leaves BEGIN open is rolled back by the pool.
            try await pool.withConnection { conn in
                try conn.execute("BEGIN")
                try conn.execute("INSERT INTO t VALUES (2)")
            }
            try await pool.transaction { try $0.execute("INSERT INTO t VALUES (3)") }
            let ids = try await pool.withConnection { conn in
                (conn.isInTransaction, try conn.execute("SELECT array_agg(id)::text FROM t").rows[0][0])
            }
            #expect(ids.0 == false)
            #expect(ids.1 == "{3}")
            await pool.shutdown()
        }
    }

    /// Two transactions at once each claim three of ten jobs with SKIP LOCKED: the second claims
    /// while the first still holds its locks, and gets other rows.
    @Test func skipLockedClaimsDisjointRows() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 2)
            try await pool.withConnection { conn in
                try conn.execute(
                    """
                    CREATE TABLE jobs (id int PRIMARY KEY, owner text);
                    INSERT INTO jobs SELECT g, NULL FROM generate_series(1, 10) g
                    """)
            }
            let firstHolds = DispatchSemaphore(value: 0)
            let secondDone = DispatchSemaphore(value: 0)
            let claim: @Sendable (PostgresConnection, String) throws -> [Int64] = { conn, owner in
                let rows = try conn.execute(
                    """
                    UPDATE jobs SET owner = $1 WHERE id IN (
                        SELECT id FROM jobs WHERE owner IS NULL ORDER BY id LIMIT 3 FOR UPDATE SKIP LOCKED)
                    RETURNING id
                    """, [.text(owner)]
                ).rows
                return rows.compactMap { $0[0].int64 }.sorted()
            }
            async let first = pool.transaction { conn in
                let ids = try claim(conn, "a")
                firstHolds.signal()
                // Hold the locks until the other transaction has claimed (a hang guard, not a timing).
                guard secondDone.wait(timeout: .now() + 60) == .success else { throw TestFailure("no second claim") }
                return ids
            }
            async let second = pool.transaction { conn in
                guard firstHolds.wait(timeout: .now() + 60) == .success else { throw TestFailure("no first claim") }
                defer { secondDone.signal() }
                return try claim(conn, "b")
            }
            let (a, b) = try await (first, second)
            #expect(a == [1, 2, 3])
            #expect(b == [4, 5, 6])
            #expect(Set(a).isDisjoint(with: b))
            let owners = try await pool.withConnection {
                try $0.execute("SELECT owner, count(*) FROM jobs GROUP BY owner ORDER BY owner").rows.map {
                    "\($0[0].string ?? "-"):\($0[1].int64 ?? 0)"
                }
            }
            #expect(owners == ["a:3", "b:3", "-:4"])
            await pool.shutdown()
        }
    }

    /// A client stopped inside a transaction (here a worker blocked mid-closure, as a SIGSTOP'd
    /// node's would be) loses its session after `idleInTransactionTimeout`, so its row locks go
    /// to whoever claims next; when it resumes its statement fails and the pool replaces it.
    @Test func aClientFrozenInATransactionLosesItsLocksAfterTheIdleTimeout() async throws {
        try await withTestDatabase { url in
            let pool = try PostgresPool(url: url, size: 1, idleInTransactionTimeout: .milliseconds(300))
            try await pool.withConnection { conn in
                try conn.execute(
                    """
                    CREATE TABLE jobs (id int PRIMARY KEY, owner text);
                    INSERT INTO jobs SELECT g, NULL FROM generate_series(1, 3) g
                    """)
            }
            let frozenHolds = DispatchSemaphore(value: 0)
            let othersClaimed = DispatchSemaphore(value: 0)
            async let frozen: Result<Void, any Error> = pool.withConnection { conn in
                Result {
                    try conn.transaction { conn in
                        try conn.execute("SELECT id FROM jobs FOR UPDATE")
                        frozenHolds.signal()
                        // Frozen until another client got the rows (a hang guard, not a timing).
                        guard othersClaimed.wait(timeout: .now() + 60) == .success else {
                            throw TestFailure("the rows were never claimed by another client")
                        }
                        try conn.execute("UPDATE jobs SET owner = 'frozen'")
                    }
                }
            }
            guard frozenHolds.wait(timeout: .now() + 60) == .success else { throw TestFailure("no lock taken") }
            let other = try PostgresConnection(url: url)
            try waitUntil(
                other,
                """
                WITH claimed AS (
                    UPDATE jobs SET owner = 'other' WHERE id IN (SELECT id FROM jobs FOR UPDATE SKIP LOCKED)
                    RETURNING id)
                SELECT count(*) = 3 FROM claimed
                """, [])
            othersClaimed.signal()
            guard case .failure(let error) = try await frozen else {
                Issue.record("the frozen client's transaction committed after its session should have ended")
                return
            }
            #expect((error as? PostgresError)?.kind == .connectionLost)
            let owners = try other.execute("SELECT DISTINCT owner FROM jobs").rows.map { $0[0].string }
            #expect(owners == ["other"])
            let setting = try await pool.withConnection { conn in
                try conn.execute("SHOW idle_in_transaction_session_timeout").rows[0][0].string
            }
            #expect(setting == "300ms")
            #expect(pool.statistics.connectionsReplaced == 1)
            await pool.shutdown()
        }
    }
}

@Suite struct PostgresListenerTests {
    @Test func notificationsReachTheHandlerAndSurviveAReconnect() async throws {
        // `within`: a lost notification fails the test instead of hanging the run.
        try await within {
            try await withTestDatabase { url in
                let (notifications, delivered) = AsyncStream.makeStream(of: PostgresListener.Notification.self)
                let (connects, connected) = AsyncStream.makeStream(of: Void.self)
                let listener = try PostgresListener(
                    url: url, channels: ["tuisong_wake", "Cache Changed"], onConnect: { connected.yield() }
                ) { delivered.yield($0) }
                var connectEvents = connects.makeAsyncIterator()
                var received = notifications.makeAsyncIterator()
                _ = await connectEvents.next()  // init's own connection

                let sender = try PostgresConnection(url: url)
                try sender.notify(channel: "tuisong_wake", payload: "message 42")
                try sender.transaction { conn in
                    try conn.notify(channel: "Cache Changed", payload: "app:7 推送")
                    try conn.notify(channel: "not_listened", payload: "ignored")
                }
                let first = await received.next()
                #expect(first?.channel == "tuisong_wake")
                #expect(first?.payload == "message 42")
                #expect(first?.senderPID == sender.backendPID)
                let second = await received.next()
                #expect(second?.channel == "Cache Changed")
                #expect(second?.payload == "app:7 推送")

                // The server drops the listener's connection: it reconnects and listens again.
                try terminate(listener.backendPID, using: sender)
                _ = await connectEvents.next()
                try sender.notify(channel: "tuisong_wake", payload: "after reconnect")
                #expect(await received.next()?.payload == "after reconnect")
                listener.shutdown()
                listener.shutdown()
            }
        }
    }
}

private final class HoldCount: Sendable {
    let value = Atomic<Int>(0)
}
