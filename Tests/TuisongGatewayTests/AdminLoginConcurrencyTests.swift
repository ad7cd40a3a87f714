import Foundation
import Testing
import TuisongCrypto
import TuisongPluginTestKit

@testable import TuisongGateway

/// Logins are checked a few at a time (PBKDF2 is slow on purpose), and a guessing burst from
/// other addresses does not make the operator's login wait for every guess. The throttle keys
/// addresses by the socket's peer (X-Forwarded-For is not trusted), so the guesses come from
/// other loopback addresses (127.0.0.2…).
@Suite(.serialized) struct AdminLoginConcurrencyTests {
    /// POST /admin/api/login from `source`; the answer's status.
    static func login(port: Int, source: String, password: String) -> Int {
        let body = Array(#"{"password": "\#(password)"}"#.utf8)
        let client = try? RawHTTPClient(port: port, receiveTimeout: 60, source: source)
        let answer = try? client?.request(
            "POST", "/admin/api/login",
            headers: [("Host", "a"), ("Content-Type", "application/json"), ("Connection", "close")], body: body)
        return answer?.status ?? 0
    }

    /// Runs every login at once, each on its own thread (blocking sockets), and returns the statuses.
    static func loginsAtOnce(port: Int, _ logins: [(source: String, password: String)]) async -> [Int] {
        await withTaskGroup(of: Int.self) { group in
            for (source, password) in logins {
                group.addTask {
                    await withCheckedContinuation { continuation in
                        Thread.detachNewThread {
                            continuation.resume(returning: login(port: port, source: source, password: password))
                        }
                    }
                }
            }
            var statuses: [Int] = []
            for await status in group { statuses.append(status) }
            return statuses
        }
    }

    @Test func theOperatorsLoginDoesNotWaitForEveryGuess() async throws {
        // Slow enough to check for the guesses to queue (each check tens of milliseconds, two at a
        // time on 2 cores), a sixth of the production count: at 600,000 the test's ~50 checks
        // spent ~15 s of the suite's CPU.
        let (gateway, client) = try await AdminTestClient.start(
            adminPasswordIterations: PasswordHash.defaultIterations / 6)
        let port = gateway.runtime.port
        let verifier = gateway.runtime.adminAPI.passwordChecks
        let guessers = (2...11).map { "127.0.0.\($0)" }

        // Each guessing address fails once: on record, its further checks wait behind clean ones.
        let first = await Self.loginsAtOnce(port: port, guessers.map { ($0, "wrong") })
        #expect(first.allSatisfy { $0 == 401 }, "\(first)")
        #expect(verifier.peakConcurrency > 1, "checks ran one at a time")

        // Two more guesses per address at once (still within the free failures: full checks).
        let burst = Task {
            await Self.loginsAtOnce(port: port, guessers.flatMap { [($0, "wrong 2"), ($0, "wrong 3")] })
        }
        #expect(await eventually(within: 10) { verifier.waitingCount >= 5 }, "the guesses never queued")
        let ok = try await client.login()  // from 127.0.0.1, no failure on record
        let stillWaiting = verifier.waitingCount
        #expect(ok.status == 200)
        // Before, the right login queued behind every guess sent before it, so none waited
        // once it was through.
        #expect(stillWaiting > 0, "the right login waited for every guess")
        let statuses = await burst.value
        #expect(statuses.allSatisfy { $0 == 401 || $0 == 429 }, "\(statuses)")

        // A first guessing round from fresh addresses: the operator's address, known from its
        // successful login, still goes ahead of them.
        let fresh = (12...31).map { "127.0.0.\($0)" }
        let freshBurst = Task { await Self.loginsAtOnce(port: port, fresh.map { ($0, "first try") }) }
        #expect(await eventually(within: 10) { verifier.waitingCount >= 5 }, "the fresh guesses never queued")
        let again = try await client.login()
        #expect(again.status == 200)
        #expect(verifier.waitingCount > 0, "the known address waited for every fresh guess")
        _ = await freshBurst.value
        await gateway.stop()
    }
}
