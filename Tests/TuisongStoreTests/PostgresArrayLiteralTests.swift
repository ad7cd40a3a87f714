import Foundation
import Testing
import TuisongPostgres
import TuisongPostgresTestKit

@testable import TuisongPostgresStore

/// The array literals every batched statement on PostgreSQL sends as one parameter
/// (`PostgresArrayLiteral`): exact text for any element, NULL only for nil.
@Suite struct PostgresArrayLiteralTests {
    static let awkward: [String?] = [
        "plain", "", "NULL", nil, #"a "quoted" word"#, #"back\slash and \"both\""#, "{braces},commas",
        "  spaces  ", "推送 — ünïcödé 🚀", #"{"aps":{"alert":"hi \"you\""},"k":"C:\\dir"}"#, "\n\t", nil,
    ]

    @Test func literalsAreSpelledAsPostgreSQLReadsThem() {
        #expect(PostgresArrayLiteral.integers([]) == "{}")
        #expect(PostgresArrayLiteral.integers([1, -2, Int64.max]) == "{1,-2,9223372036854775807}")
        #expect(PostgresArrayLiteral.texts([String]()) == "{}")
        #expect(PostgresArrayLiteral.texts(["a", #"b "c""#, #"d\e"#]) == #"{"a","b \"c\"","d\\e"}"#)
        #expect(PostgresArrayLiteral.texts(nullable: ["NULL", nil]) == #"{"NULL",NULL}"#)
    }

    /// Read back by PostgreSQL element by element: equal to what was sent, in order.
    @Test func everyElementComesBackAsSent() async throws {
        try await WorkQueueTests.withNodes(1) { nodes in
            let back = try await nodes[0].read { conn in
                try conn.execute(
                    "SELECT v, n FROM unnest($1::text[], $2::bigint[]) WITH ORDINALITY AS u(v, n, i) ORDER BY i",
                    [
                        PostgresArray.text(Self.awkward),
                        PostgresArray.int(Self.awkward.indices.map { Int64($0) * 1_000_000_007 - 5 }),
                    ]
                ).rows.map { ($0[0].string, $0[1].int64) }
            }
            #expect(back.map(\.0) == Self.awkward)
            #expect(back.map(\.1) == Self.awkward.indices.map { Int64($0) * 1_000_000_007 - 5 })
            let plain = try await nodes[0].read { conn in
                try conn.execute(
                    "SELECT unnest($1::text[])", [PostgresArray.text(Self.awkward.compactMap { $0 })]
                ).rows.map { $0[0].string }
            }
            #expect(plain == Self.awkward.compactMap { $0 })
        }
    }
}
