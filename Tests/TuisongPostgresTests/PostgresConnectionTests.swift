import Testing
import TuisongPostgres
import TuisongPostgresTestKit

@Suite struct PostgresConnectionTests {
    @Test func typedValuesRoundTrip() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute(
                """
                CREATE TABLE items (
                    id bigint PRIMARY KEY, small integer, ratio double precision, name text, blob bytea,
                    flag boolean, amount numeric, created timestamptz)
                """)
            let allBytes = (0...255).map(UInt8.init)
            let name = "推送 🚀 \"quoted\" \\back\\ tab\there\nnewline 'single'"
            let insert = "INSERT INTO items VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
            try connection.execute(
                insert,
                [
                    .int(.max), .int(-7), .double(0.1), .text(name), .bytes(allBytes), .bool(true), "12345.678",
                    "2026-01-02T03:04:05Z",
                ])
            try connection.execute(insert, [.int(.min), .null, .null, .null, .null, .null, .null, .null])
            try connection.execute(insert, [.int(0), 0, .double(-.infinity), "", .bytes([]), false, .null, .null])

            let rows = try connection.execute("SELECT * FROM items ORDER BY id DESC").rows
            #expect(rows.count == 3)
            #expect(rows[0]["id"] == .int(.max))
            #expect(rows[0]["small"] == .int(-7))
            #expect(rows[0]["ratio"] == .double(0.1))
            #expect(rows[0]["name"]?.string == name)
            #expect(rows[0]["blob"] == .bytes(allBytes))
            #expect(rows[0]["flag"] == .bool(true))
            #expect(rows[0]["amount"]?.string == "12345.678")
            #expect(rows[0]["amount"]?.double == 12345.678)
            #expect(rows[0]["created"]?.string?.hasPrefix("2026-01-02") == true)
            #expect(rows[1][0] == .int(0))
            #expect(rows[1]["ratio"] == .double(-.infinity))
            #expect(rows[1]["name"] == .text(""))
            #expect(rows[1]["blob"] == .bytes([]))
            #expect(rows[1]["flag"] == .bool(false))
            #expect(rows[2]["id"]?.int64 == .min)
            #expect(rows[2].values.dropFirst().allSatisfy { $0.isNull })
            #expect(rows[2]["no such column"] == nil)

            let echoed = try connection.execute(
                "SELECT $1::bytea AS b, $2 AS t, $3 AS i, $4 AS n", [.bytes([0, 0, 1]), "零\u{0001}", .int(42), .null]
            ).rows[0]
            #expect(echoed["b"] == .bytes([0, 0, 1]))
            #expect(echoed["t"] == .text("零\u{0001}"))
            #expect(echoed["i"] == .int(42))
            #expect(echoed["n"] == .null)

            let update = try connection.execute("UPDATE items SET flag = NOT flag WHERE flag IS NOT NULL")
            #expect(update.affectedRows == 2)
            #expect(update.commandTag == "UPDATE 2")
        }
    }

    @Test func preparedStatementsRunManyTimes() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE tokens (id int PRIMARY KEY, token text NOT NULL)")
            try connection.prepare(name: "insert_token", sql: "INSERT INTO tokens VALUES ($1, $2)")
            for id in 1...50 {
                try connection.prepare(name: "insert_token", sql: "INSERT INTO tokens VALUES ($1, $2)")
                try connection.executePrepared(name: "insert_token", [.int(Int64(id)), .text("token-\(id)")])
            }
            try connection.prepare(name: "find", sql: "SELECT token FROM tokens WHERE id = $1")
            #expect(try connection.executePrepared(name: "find", [.int(17)]).rows[0][0] == .text("token-17"))
            // Same name, new SQL: replaced.
            try connection.prepare(name: "find", sql: "SELECT count(*) FROM tokens WHERE id <= $1")
            #expect(try connection.executePrepared(name: "find", [.int(17)]).rows[0][0] == .int(17))
        }
    }

    @Test func errorsCarrySQLState() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE apps (id int PRIMARY KEY)")
            try connection.execute("INSERT INTO apps VALUES (1)")
            let duplicate = #expect(throws: PostgresError.self) {
                try connection.execute("INSERT INTO apps VALUES ($1)", [.int(1)])
            }
            #expect(duplicate?.kind == .server)
            #expect(duplicate?.sqlState == "23505")
            #expect(duplicate?.isUniqueViolation == true)
            #expect(duplicate?.constraint == "apps_pkey")
            #expect(duplicate?.detail?.contains("(id)=(1)") == true)

            let syntax = #expect(throws: PostgresError.self) { try connection.execute("SELEC 1") }
            #expect(syntax?.sqlState == "42601")
            #expect(syntax?.message.contains("syntax error") == true)
            // The connection is still usable afterwards.
            #expect(try connection.execute("SELECT 1").rows[0][0] == .int(1))

            let refused = #expect(throws: PostgresError.self) {
                try PostgresConnection(url: TestCluster.url(try TestCluster.url.get(), database: "no_such_database"))
            }
            #expect(refused?.kind == .connect)
            #expect(refused?.message.contains("no_such_database") == true)
        }
    }

    @Test func transactionsCommitAndRollBack() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE t (id int PRIMARY KEY)")
            try connection.transaction { try $0.execute("INSERT INTO t VALUES (1)") }
            #expect(throws: TestFailure.self) {
                try connection.transaction { conn in
                    try conn.execute("INSERT INTO t VALUES (2)")
                    throw TestFailure("abandon")
                }
            }
            // A failed statement caught inside the body: COMMIT becomes ROLLBACK, which is reported.
            let rolledBack = #expect(throws: PostgresError.self) {
                try connection.transaction { conn in
                    try conn.execute("INSERT INTO t VALUES (3)")
                    _ = try? conn.execute("INSERT INTO t VALUES (1)")
                }
            }
            #expect(rolledBack?.sqlState == "25P02")
            #expect(!connection.isInTransaction)
            #expect(try connection.execute("SELECT array_agg(id ORDER BY id)::text FROM t").rows[0][0] == "{1}")
        }
    }

    @Test func aDeferredBeginOpensItsTransactionWithTheNextStatementHoweverItIsSent() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE t (id int PRIMARY KEY)")
            let isolation = "SELECT current_setting('transaction_isolation')"
            let ways: [(String, (PostgresConnection) throws -> Void)] = [
                ("simple", { try $0.execute(isolation) }),
                ("with parameters", { try $0.execute("INSERT INTO t VALUES ($1)", [.int(1)]) }),
                ("prepared now", { try $0.prepare(name: "deferred_insert", sql: "INSERT INTO t VALUES ($1)") }),
                ("prepared before", { try $0.executePrepared(name: "deferred_insert", [.int(2)]) }),
                ("pipelined", { _ = $0.pipeline([("INSERT INTO t VALUES ($1)", [.int(3)])]) }),
                ("pipelined apart", { _ = $0.pipeline([("SELECT $1::int", [.int(3)])], atomic: false) }),
                ("copied", { try $0.copyIn(sql: "COPY t (id) FROM STDIN", rows: [["4"]]) }),
            ]
            for (way, send) in ways {
                connection.deferBegin("BEGIN ISOLATION LEVEL REPEATABLE READ")
                #expect(!connection.isInTransaction, "\(way): nothing sent yet")
                try send(connection)
                #expect(connection.isInTransaction, "\(way)")
                #expect(try connection.execute(isolation).rows[0][0] == "repeatable read", "\(way)")
                #expect(!connection.endDeferredBegin(), "\(way): the BEGIN was sent")
                try connection.execute("COMMIT")
            }
            #expect(try connection.execute("SELECT array_agg(id ORDER BY id)::text FROM t").rows[0][0] == "{1,2,3,4}")

            // A transaction whose body sends nothing opens none.
            #expect(try connection.transaction { _ in 7 } == 7)
            #expect(!connection.isInTransaction)
            connection.deferBegin()
            #expect(connection.endDeferredBegin(), "an unsent BEGIN is dropped")
            try connection.execute("INSERT INTO t VALUES (5)")
            #expect(!connection.isInTransaction)

            // A BEGIN the server refuses: the statement sent with it does not run.
            connection.deferBegin("BEGIN ISOLATION LEVEL NONSENSE")
            let refused = #expect(throws: PostgresError.self) {
                try connection.execute("INSERT INTO t VALUES ($1)", [.int(6)])
            }
            #expect(refused?.sqlState == "42601")
            #expect(!connection.isInTransaction)
            #expect(try connection.execute("SELECT count(*) FROM t WHERE id = 6").rows[0][0] == .int(0))
            for atomic in [true, false] {
                connection.deferBegin("BEGIN ISOLATION LEVEL NONSENSE")
                let answers = connection.pipeline([("INSERT INTO t VALUES ($1)", [.int(7)])], atomic: atomic)
                #expect(answers.first?.error?.sqlState == "42601", "atomic: \(atomic)")
                #expect(!connection.isInTransaction)
            }
            #expect(try connection.execute("SELECT count(*) FROM t WHERE id = 7").rows[0][0] == .int(0))
        }
    }

    @Test func aStatementInATransactionOfItsOwnIsBegunAndCommittedWithIt() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE t (id int PRIMARY KEY)")
            try connection.execute("INSERT INTO t VALUES (1)")
            let inside = """
                SELECT current_setting('transaction_read_only') || ' ' || current_setting('transaction_isolation')
                    || ' ' || $1::text
                """
            let answer = try connection.execute(
                inside, [.text("unnamed")], inTransactionOfItsOwn: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            #expect(answer.rows[0][0] == "on repeatable read unnamed")
            #expect(!connection.isInTransaction, "committed with it")
            try connection.prepare(name: "own_count", sql: "SELECT count(*) FROM t WHERE id >= $1")
            let counted = try connection.executePrepared(
                name: "own_count", [.int(0)], inTransactionOfItsOwn: "BEGIN READ ONLY")
            #expect(counted.rows[0][0] == .int(1))
            #expect(!connection.isInTransaction)

            // The transaction's own rules hold: a read-only one refuses a write, rolled back.
            let refused = #expect(throws: PostgresError.self) {
                try connection.execute("INSERT INTO t VALUES ($1)", [.int(2)], inTransactionOfItsOwn: "BEGIN READ ONLY")
            }
            #expect(refused?.sqlState == "25006")
            #expect(!connection.isInTransaction, "the failed transaction was rolled back")
            // A refused BEGIN runs nothing.
            #expect(throws: PostgresError.self) {
                try connection.execute("INSERT INTO t VALUES ($1)", [.int(3)], inTransactionOfItsOwn: "BEGIN NONSENSE")
            }
            #expect(!connection.isInTransaction)
            #expect(try connection.execute("SELECT array_agg(id)::text FROM t").rows[0][0] == "{1}")

            // Inside a transaction, open or deferred, it would end the caller's: refused.
            for deferred in [false, true] {
                if deferred { connection.deferBegin() } else { try connection.execute("BEGIN") }
                let misuse = #expect(throws: PostgresError.self) {
                    try connection.execute("SELECT $1::int", [.int(1)], inTransactionOfItsOwn: "BEGIN READ ONLY")
                }
                #expect(misuse?.kind == .usage)
                if deferred { #expect(connection.endDeferredBegin()) } else { try connection.execute("ROLLBACK") }
            }
            #expect(try connection.execute("SELECT 1").rows[0][0] == .int(1))
        }
    }

    @Test func pipelineRunsABatchInOneRoundTrip() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE t (id int PRIMARY KEY, note text)")
            try connection.execute("INSERT INTO t VALUES (1, 'existing')")
            let batch: [(String, [PostgresValue])] = [
                ("INSERT INTO t VALUES ($1, $2)", [.int(10), "ten"]),
                ("INSERT INTO t VALUES ($1, $2)", [.int(1), "duplicate"]),
                ("INSERT INTO t VALUES ($1, $2)", [.int(11), "eleven"]),
            ]

            // Atomic: the failure rolls back the first and skips the third.
            let atomic = connection.pipeline(batch)
            #expect(atomic.count == 3)
            #expect((try? atomic[0].get())?.affectedRows == 1)
            #expect(atomic[1].error?.sqlState == "23505")
            #expect(atomic[2].error != nil)
            #expect(try connection.execute("SELECT count(*) FROM t").rows[0][0] == .int(1))

            // Independent: only the failing statement is lost.
            let independent = connection.pipeline(batch, atomic: false)
            #expect((try? independent[0].get())?.affectedRows == 1)
            #expect(independent[1].error?.sqlState == "23505")
            #expect((try? independent[2].get())?.affectedRows == 1)
            #expect(try connection.execute("SELECT count(*) FROM t").rows[0][0] == .int(3))

            // Many statements with rows coming back; the connection is usable after.
            let selects = (0..<2000).map {
                ("SELECT $1 + 1 AS next, repeat('x', 100) AS pad", [PostgresValue.int(Int64($0))])
            }
            let answers = connection.pipeline(selects)
            #expect(answers.count == 2000)
            #expect(try answers.enumerated().allSatisfy { try $1.get().rows[0]["next"] == .int(Int64($0 + 1)) })
            #expect(try connection.execute("SELECT 'after'").rows[0][0] == "after")
        }
    }

    @Test func copyInLoadsTenThousandRows() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            try connection.execute("CREATE TABLE devices (id int PRIMARY KEY, token text, locale text)")
            let tricky = "tab\there, newline\nthere, cr\r, backslash \\ and \\N, 推送"
            let rows = (1...10_000).lazy.map { id -> [String?] in
                [String(id), id == 5000 ? tricky : "token-\(id)", id % 3 == 0 ? nil : "zh_CN"]
            }
            let copied = try connection.copyIn(sql: "COPY devices (id, token, locale) FROM STDIN", rows: rows)
            #expect(copied == 10_000)
            let summary = try connection.execute("SELECT count(*), count(locale) FROM devices").rows[0]
            #expect(summary[0] == .int(10_000))
            #expect(summary[1] == .int(10_000 - 3333))
            #expect(try connection.execute("SELECT token FROM devices WHERE id = 5000").rows[0][0] == .text(tricky))

            // A bad row fails the whole COPY with the server's error; the connection stays usable.
            let failed = #expect(throws: PostgresError.self) {
                try connection.copyIn(sql: "COPY devices (id, token, locale) FROM STDIN", rows: [["1", "again", nil]])
            }
            #expect(failed?.sqlState == "23505")
            let notCopy = #expect(throws: PostgresError.self) { try connection.copyIn(sql: "SELECT 1", rows: []) }
            #expect(notCopy?.kind == .usage)
            #expect(try connection.execute("SELECT count(*) FROM devices").rows[0][0] == .int(10_000))
        }
    }

    @Test func aTerminatedBackendFailsTheNextStatement() async throws {
        try await withTestDatabase { url in
            let connection = try PostgresConnection(url: url)
            let admin = try PostgresConnection(url: url)
            try terminate(connection.backendPID, using: admin)
            let lost = #expect(throws: PostgresError.self) { try connection.execute("SELECT 1") }
            #expect(lost?.kind == .connectionLost)
            #expect(!connection.isConnected)
        }
    }
}

extension Result {
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
