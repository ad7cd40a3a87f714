import Foundation
import Synchronization
import Testing

@testable import TuisongHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// Clients that send a request a byte at a time, never idle long enough for the idle timeout:
/// held open for ever, enough of them once left the server unreachable.
@Suite(.serialized) struct SlowClientTests {
    /// Connections that each send the start of a request, then one more byte every `interval`,
    /// until the server closes them or `duration` passes.
    final class Tricklers: @unchecked Sendable {  // driven by one thread at a time
        let clients: [RawHTTPClient]
        private(set) var closed: [Bool]

        init(port: Int, count: Int, sources: [String], start: (Int) -> String) throws {
            var clients: [RawHTTPClient] = []
            for index in 0..<count {
                let client = try RawHTTPClient(
                    port: port, receiveTimeout: 0.05, source: sources[index % sources.count])
                // A connection the server refused outright is already closed: that counts.
                try? client.send(start(index))
                clients.append(client)
            }
            self.clients = clients
            closed = Array(repeating: false, count: count)
        }

        var openCount: Int { closed.filter { !$0 }.count }

        /// Sends one byte to each open connection every `interval`; returns when every one is
        /// closed or `duration` has passed.
        func trickle(every interval: Duration, for duration: Duration, until stop: () -> Bool = { false }) {
            let deadline = ContinuousClock.now + duration
            while ContinuousClock.now < deadline && openCount > 0 && !stop() {
                for (index, client) in clients.enumerated() where !closed[index] {
                    if isClosed(client) || (try? client.send("x")) == nil { closed[index] = true }
                }
                Thread.sleep(forTimeInterval: Double(interval.components.attoseconds) / 1e18)
            }
        }

        /// End of stream or a reset, without waiting.
        private func isClosed(_ client: RawHTTPClient) -> Bool {
            var byte: UInt8 = 0
            let count = recv(client.descriptor, &byte, 1, Int32(MSG_DONTWAIT))
            return count == 0 || (count < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
        }
    }

    static let headerStart = "GET /inline HTTP/1.1\r\nHost: a\r\nX-Slow: "
    static let bodyStart = "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 900\r\n\r\n"

    @Test("a request trickled a byte at a time is cut off at its receive deadline, though never idle")
    func trickledRequestsAreClosedAtTheDeadline() async throws {
        try await withServer(
            {
                $0.connectionTimeout = 1
                $0.receiveTimeout = 2
            }, router: standardRouter()
        ) { server in
            let port = server.port
            let tricklers = try await offPool {
                // Half trickle headers, half a body: the deadline covers both.
                let tricklers = try Tricklers(port: port, count: 20, sources: ["127.0.0.2"]) {
                    $0 % 2 == 0 ? Self.headerStart : Self.bodyStart
                }
                tricklers.trickle(every: .milliseconds(250), for: .seconds(15))
                return tricklers
            }
            #expect(tricklers.openCount == 0, "\(tricklers.openCount) of 20 slow connections still open after 15 s")
            #expect(try await fetch(port: port, "GET", "/inline").status == 200)
        }
    }

    @Test("slow clients on one address leave room for other clients")
    func oneAddressCannotTakeEveryConnection() async throws {
        // No receive deadline here: the per-address cap alone keeps room.
        try await withServer(
            {
                $0.maxConnections = 16
                $0.maxConnectionsPerAddress = 64
                $0.receiveTimeout = 0
            },
            router: standardRouter()
        ) { server in
            let port = server.port
            let done = StopFlag()
            let tricklers = try await offPool {
                try Tricklers(port: port, count: 16, sources: ["127.0.0.2"]) { _ in Self.headerStart }
            }
            async let trickling: Void = offPool {
                tricklers.trickle(every: .milliseconds(250), for: .seconds(30)) { done.isSet }
            }
            #expect(await eventually { tricklers.openCount == 15 }, "the server never cut the 16th off")
            // Generous bound: the point is an answer at all (before the cap there was none).
            let answer = try await offPool {
                try RawHTTPClient(port: port, receiveTimeout: 10, source: "127.0.0.1").request("GET", "/inline")
            }
            #expect(answer.status == 200)
            #expect(tricklers.openCount == 15, "one address holds at most 16 - 16/16 connections")
            done.set()
            _ = try await trickling
        }
    }

    @Test("slow clients from many addresses filling every connection are cut off, and a new request is answered")
    func manyAddressesAreFreedByTheDeadline() async throws {
        try await withServer(
            {
                $0.maxConnections = 16
                $0.maxConnectionsPerAddress = 4
                $0.receiveTimeout = 2
            },
            router: standardRouter()
        ) { server in
            let port = server.port
            let done = StopFlag()
            let tricklers = try await offPool {
                try Tricklers(
                    port: port, count: 16, sources: ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"]
                ) { _ in Self.headerStart }
            }
            async let trickling: Void = offPool {
                tricklers.trickle(every: .milliseconds(250), for: .seconds(30)) { done.isSet }
            }
            let answer = try await offPool {
                try RawHTTPClient(port: port, receiveTimeout: 15, source: "127.0.0.1").request("GET", "/inline")
            }
            #expect(answer.status == 200)
            done.set()
            _ = try await trickling
        }
    }

    @Test("the per-address limit always leaves a sixteenth of the connections to others")
    func perAddressLimit() {
        #expect(HTTPServer.effectivePerAddressLimit(maxConnections: 4096, maxConnectionsPerAddress: 256) == 256)
        #expect(HTTPServer.effectivePerAddressLimit(maxConnections: 128, maxConnectionsPerAddress: 256) == 120)
        #expect(HTTPServer.effectivePerAddressLimit(maxConnections: 16, maxConnectionsPerAddress: 64) == 15)
        #expect(HTTPServer.effectivePerAddressLimit(maxConnections: 1, maxConnectionsPerAddress: 256) == 1)
    }
}

/// A flag one task sets and a trickling thread polls.
final class StopFlag: Sendable {
    private let value = Atomic(false)
    var isSet: Bool { value.load(ordering: .relaxed) }
    func set() { value.store(true, ordering: .relaxed) }
}
