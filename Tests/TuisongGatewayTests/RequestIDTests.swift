import Testing
import TuisongGatewayTestKit
import TuisongPluginTestKit

/// The `X-Request-Id` the gateway makes up: request ids end up in URLs and support tickets, so
/// one must not tell anything about another (how many requests came between them, which process).
@Suite struct RequestIDTests {
    @Test func aGeneratedRequestIDIs128RandomBits() async throws {
        let gateway = try await TestGateway.start()
        defer { Task { await gateway.stop() } }
        var ids: [String] = []
        for _ in 0..<8 {
            let answer = try await http("GET", "\(gateway.baseURL)/healthz")
            ids.append(try #require(answer.headers["x-request-id"]))
        }
        for id in ids {
            #expect(id.utf8.count == 32, "\(id)")
            #expect(id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }, "\(id)")
        }
        #expect(Set(ids).count == ids.count)
        // No per-process prefix: two of eight random ids share their first 6 digits once in 600,000 runs.
        let prefixes = Set(ids.map { $0.prefix(6) })
        #expect(prefixes.count == ids.count, "\(ids)")
    }
}
