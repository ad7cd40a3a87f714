import Foundation
import Synchronization
import Testing
import TuisongPluginTestKit

@testable import TuisongHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// Resumes after `seconds` on a Dispatch timer, ignoring task cancellation: a handler that
/// cannot be stopped.
func uncancellableSleep(_ seconds: Double) async {
    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) { continuation.resume() }
    }
}

@Suite("Async handlers: timeouts, concurrency, shutdown")
struct AsyncHandlerTests {
    @Test("a handler past the request timeout gets 503 in its dialect; its late answer is dropped")
    func requestTimeout() async throws {
        let router = Router()
        let observedCancellation = Mutex(false)
        let lateAnswers = Atomic<Int>(0)
        router.setErrorResponder(forPrefix: "/rest/") { error, _ in
            .json(object: ["error_code": 30600, "error_msg": error.code], status: error.status)
        }
        router.add(.GET, "/rest/slow") { _ in
            try? await Task.sleep(for: .seconds(20))
            observedCancellation.withLock { $0 = Task.isCancelled }
            lateAnswers.add(1, ordering: .relaxed)
            return .text("too late")
        }
        router.add(.GET, "/stubborn") { _ in
            await uncancellableSleep(1.0)
            lateAnswers.add(1, ordering: .relaxed)
            return .text("too late")
        }
        router.add(.GET, "/fast") { _ in .text("fast") }
        try await withServer({ $0.requestTimeout = 0.3 }, router: router) { server in
            let port = server.port
            let (slow, next) = try await offPool {
                let client = try RawHTTPClient(port: port)
                let slow = try client.request("GET", "/rest/slow")
                return (slow, try client.request("GET", "/fast"))
            }
            // The timeout answered, not the handler (which would have answered 200 after 20 s).
            #expect(slow.status == 503)
            #expect(try slow.json()["error_msg"] as? String == "request_timeout")
            #expect(next.text == "fast")
            // The cancelled handler finished; nothing reached the connection.
            #expect(await eventually { lateAnswers.load(ordering: .relaxed) == 1 })
            #expect(observedCancellation.withLock { $0 })

            let stubborn = try await fetch(port: port, "GET", "/stubborn")
            #expect(stubborn.status == 503)
            #expect(
                try (stubborn.json()["error"] as? [String: Any])?["code"] as? String
                    == "request_timeout")
            // Its answer arrives after the request is complete and the exchange released.
            #expect(await eventually { lateAnswers.load(ordering: .relaxed) == 2 })
            #expect(
                await eventually { server.liveRequestCount == 0 && server.pendingHandlerCount == 0 }
            )
            #expect(try await fetch(port: port, "GET", "/fast").text == "fast")
        }
    }

    @Test("a request timeout of 0 means no limit")
    func noRequestTimeout() async throws {
        let router = Router()
        router.add(.GET, "/slow") { _ in
            try? await Task.sleep(for: .milliseconds(400))
            return .text("done")
        }
        try await withServer({ $0.requestTimeout = 0 }, router: router) {
            (server: HTTPServer) async throws in
            #expect(try await fetch(port: server.port, "GET", "/slow").text == "done")
        }
    }

    @Test("the idle timeout does not cut off a connection whose handler is still working")
    func idleTimeoutSparesSuspended() async throws {
        let router = Router()
        router.add(.GET, "/slow") { _ in
            await uncancellableSleep(2.5)
            return .text("worth the wait")
        }
        try await withServer({ $0.connectionTimeout = 1 }, router: router) { server in
            let response = try await fetch(port: server.port, "GET", "/slow")
            #expect(response.status == 200)
            #expect(response.text == "worth the wait")
            #expect(await eventually { server.liveRequestCount == 0 })
        }
    }

    @Test("a client that hangs up while its handler runs costs nothing")
    func clientGone() async throws {
        let router = Router()
        let finished = Atomic<Int>(0)
        router.add(.GET, "/slow") { _ in
            await uncancellableSleep(0.3)
            finished.add(1, ordering: .relaxed)
            return .text(String(repeating: "x", count: 100_000))
        }
        router.add(.GET, "/fast") { _ in .text("fast") }
        try await withServer(router: router) { server in
            let port = server.port
            for _ in 0..<5 {
                try await offPool {
                    let client = try RawHTTPClient(port: port)
                    try client.send("GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
                }  // the client is closed here, before the answer
            }
            #expect(await eventually { finished.load(ordering: .relaxed) == 5 })
            #expect(await eventually { server.liveRequestCount == 0 })
            #expect(try await fetch(port: port, "GET", "/fast").text == "fast")
        }
    }

    @Test("200 parallel connections are all answered")
    func manyConnections() async throws {
        let router = Router()
        router.add(.GET, "/work/{id}") { request in
            try? await Task.sleep(for: .milliseconds(Int.random(in: 1...50)))
            return .text(request.pathParameters["id"] ?? "")
        }
        try await withServer(router: router) { server in
            let port = server.port
            let answers = try await withThrowingTaskGroup(of: (Int, RawResponse).self) { group in
                for index in 0..<200 {
                    group.addTask { (index, try await fetch(port: port, "GET", "/work/\(index)")) }
                }
                var answers: [Int: RawResponse] = [:]
                for try await (index, response) in group { answers[index] = response }
                return answers
            }
            #expect(answers.count == 200)
            for (index, response) in answers {
                #expect(response.status == 200)
                #expect(response.text == "\(index)")
            }
            #expect(await eventually { server.liveRequestCount == 0 })
        }
    }

    @Test("a suspended handler does not hold up a single server thread")
    func noThreadWaits() async throws {
        let router = Router()
        let (opened, open) = AsyncStream<Void>.makeStream()
        router.add(.GET, "/slow") { _ in
            for await _ in opened { break }
            return .text("slow")
        }
        router.add(.GET, "/fast") { _ in .text("fast") }
        try await withServer({ $0.threads = 1 }, router: router) { server in
            let port = server.port
            async let slow = fetch(port: port, "GET", "/slow")
            #expect(await eventually { server.pendingHandlerCount == 1 })
            let fast = try await fetch(port: port, "GET", "/fast")
            #expect(fast.text == "fast")
            // Answered while the slow handler still waits for the test to let it go.
            #expect(server.pendingHandlerCount == 1)
            open.yield()
            open.finish()
            #expect(try await slow.text == "slow")
        }
    }

    @Test("shutdown stops accepting, lets the in-flight handler finish, then stops")
    func gracefulShutdown() async throws {
        let router = Router()
        let (opened, open) = AsyncStream<Void>.makeStream()
        let finished = Atomic<Bool>(false)
        router.add(.GET, "/slow") { _ in
            for await _ in opened { break }
            finished.store(true, ordering: .releasing)
            return .text("finished")
        }
        let server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), router: router)
        try server.start()
        let port = server.port
        async let inFlight = fetch(port: port, "GET", "/slow")
        #expect(await eventually { server.pendingHandlerCount == 1 })
        async let stopping: Void = server.shutdown()
        // Once quiesced, new connections are refused while the slow request is still running.
        let refused = await eventually { (try? RawHTTPClient(port: port)) == nil }
        #expect(refused)
        let finishedBefore = finished.load(ordering: .acquiring)
        #expect(!finishedBefore)
        open.yield()
        open.finish()
        // A second caller returns only once the server has stopped, too: after the handler.
        await server.shutdown()
        let finishedAfter = finished.load(ordering: .acquiring)
        #expect(finishedAfter)
        #expect(server.liveRequestCount == 0)
        let response = try await inFlight
        #expect(response.status == 200)
        #expect(response.text == "finished")
        #expect(response.header("Connection")?.lowercased() == "close")
        await stopping
        #expect(server.liveRequestCount == 0)
        await server.shutdown()
    }

    @Test("a handler outliving the grace period is answered 503 and the daemon still stops")
    func shutdownGraceExceeded() async throws {
        let router = Router()
        let finished = Atomic<Bool>(false)
        router.add(.GET, "/stuck") { _ in
            await uncancellableSleep(3)
            finished.store(true, ordering: .releasing)
            return .text("never seen")
        }
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.shutdownGracePeriod = 0.2
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        let port = server.port
        async let stuck = fetch(port: port, "GET", "/stuck")
        #expect(await eventually { server.pendingHandlerCount == 1 })
        await server.shutdown()
        // Stopped without waiting for the handler, which cannot be cancelled.
        let handlerFinished = finished.load(ordering: .acquiring)
        #expect(!handlerFinished)
        let response = try await stuck
        #expect(response.status == 503)
        #expect(
            try (response.json()["error"] as? [String: Any])?["code"] as? String
                == "service_unavailable")
    }

    @Test("a request still uploading, or still sending headers, when the grace ends is answered 503")
    func shutdownAnswersUploadsInProgress() async throws {
        let router = Router()
        router.add(.POST, "/upload") { request in .text("got \(request.body.count)") }
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.shutdownGracePeriod = 0.3
        let server = HTTPServer(configuration: configuration, router: router)
        try server.start()
        let port = server.port
        let uploading = try RawHTTPClient(port: port)
        try uploading.send(
            "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 100\r\n\r\n" + String(repeating: "a", count: 10))
        let heading = try RawHTTPClient(port: port)
        try heading.send("POST /upload HTTP/1.1\r\nHost: a\r\n")
        #expect(await eventually { server.liveRequestCount == 2 })

        async let stopping: Void = server.shutdown()
        // Once the grace period is over, both clients go on and finish their requests: still
        // open, they are answered.
        try await waitUntil("the grace period ended") { server.graceIsOver }
        let (upload, headers) = try await offPool {
            try uploading.send(String(repeating: "b", count: 90))
            try heading.send("Content-Length: 5\r\n\r\nhello")
            return (try uploading.readResponseOrClose(), try heading.readResponseOrClose())
        }
        for response in [upload, headers] {
            #expect(response?.status == 503, "closed without an answer")
            #expect(
                try response.map { try $0.json()["error"] as? [String: Any] }??["code"] as? String
                    == "service_unavailable")
            #expect(response?.header("Connection")?.lowercased() == "close")
        }
        await stopping
        #expect(server.liveRequestCount == 0)
    }

    @Test("a server dropped without shutdown stops cleanly, even with a handler running")
    func deinitStops() async throws {
        let router = Router()
        router.add(.GET, "/stuck") { _ in
            await uncancellableSleep(1)
            return .text("late")
        }
        var port = 0
        var server: HTTPServer? = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: 0), router: router)
        try server?.start()
        port = server?.port ?? 0
        let capturedPort = port
        async let stuck = fetch(port: capturedPort, "GET", "/stuck")
        #expect(await eventually { (server?.pendingHandlerCount ?? 0) == 1 })
        server = nil
        let response = try? await stuck
        #expect(response == nil || response?.status == 503)
        #expect((try? RawHTTPClient(port: capturedPort)) == nil)
    }

    @Test("start reports an occupied port with the system's reason")
    func addressInUse() async throws {
        let first = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), router: Router())
        try first.start()
        let second = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: first.port), router: Router())
        do {
            try second.start()
            Issue.record("the second bind succeeded")
        } catch let error as HTTPServerError {
            #expect(error.errno == EADDRINUSE)
            #expect(error.description.contains("Address already in use"))
            #expect(error.description.contains("127.0.0.1:\(first.port)"))
        }
        #expect(throws: HTTPServerError.self) { try first.start() }
        let badHost = HTTPServer(
            configuration: .init(host: "not a host name", port: 0), router: Router())
        #expect(throws: HTTPServerError.self) { try badHost.start() }
        await first.shutdown()
        await first.shutdown()
    }

    @Test("a failed libmicrohttpd start explains itself and releases the port")
    func failedStart() async throws {
        var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
        configuration.tls = .init(
            certificateChainPEM: "not a certificate", privateKeyPEM: "not a key")
        let broken = HTTPServer(configuration: configuration, router: Router())
        do {
            try broken.start()
            Issue.record("a server with a garbage certificate started")
        } catch let error as HTTPServerError {
            #expect(error.description.contains("TLS"), "\(error)")
        }
        // Bind an ephemeral port, then fail on it: the port must be free again afterwards.
        let probe = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0), router: Router())
        try probe.start()
        let port = probe.port
        await probe.shutdown()
        configuration.port = port
        #expect(throws: HTTPServerError.self) {
            try HTTPServer(configuration: configuration, router: Router()).start()
        }
        let again = HTTPServer(
            configuration: .init(host: "127.0.0.1", port: port), router: Router())
        try again.start()
        await again.shutdown()
    }

    @Test("IPv6 loopback")
    func ipv6() async throws {
        let router = Router()
        router.add(.GET, "/peer") { request in .text(request.remoteAddress ?? "none") }
        let server = HTTPServer(configuration: .init(host: "::1", port: 0), router: router)
        do {
            try server.start()
        } catch let error as HTTPServerError
            where error.errno == EADDRNOTAVAIL || error.errno == EAFNOSUPPORT
        {
            return  // no IPv6 on this machine
        }
        let result = try await curl(["-g", "http://[::1]:\(server.port)/peer"])
        #expect(result.output == "::1")
        await server.shutdown()
    }

    @Test("HTTPS with a certificate, request.isTLS set")
    func tls() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tuisong-tls-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let key = directory.appendingPathComponent("key.pem").path
        let certificate = directory.appendingPathComponent("cert.pem").path
        let openssl = ChildProcess()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = [
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", certificate,
            "-days", "1", "-subj", "/CN=localhost",
        ]
        openssl.standardError = FileHandle.nullDevice
        try openssl.run()
        openssl.waitUntilExit()
        #expect(openssl.terminationStatus == 0)

        let router = Router()
        router.add(.GET, "/whoami") { request in .json(object: ["tls": request.isTLS]) }
        router.add(.POST, "/echo") { request in .json(object: ["received": request.body.count]) }
        let tls = HTTPServer.Configuration.TLS(
            certificateChainPEM: try String(contentsOfFile: certificate, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: key, encoding: .utf8))
        try await withServer({ $0.tls = tls }, router: router) { server in
            let result = try await curl([
                "--cacert", certificate, "https://localhost:\(server.port)/whoami",
            ])
            #expect(result.status == 0)
            #expect(result.output == #"{"tls":true}"#)
            // Over TLS as on plain connections: a body with a Content-Length is read, a chunked
            // one refused 411.
            let good = try await rawOverTLS(
                port: server.port,
                "POST /echo HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc")
            #expect(good.hasPrefix("HTTP/1.1 200 "), "\(good)")
            #expect(good.hasSuffix(#"{"received":3}"#), "\(good)")
            let chunked = try await rawOverTLS(
                port: server.port,
                "POST /echo HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
            #expect(chunked.hasPrefix("HTTP/1.1 411 "), "\(chunked)")
            #expect(chunked.contains("length_required"), "\(chunked)")
        }
    }

    /// Sends `request` over TLS with `openssl s_client` and returns what the server answered
    /// until it closed the connection (at most 10 s).
    private func rawOverTLS(port: Int, _ request: String) async throws -> String {
        try await offPool {
            let client = ChildProcess()
            // Bounded: a server that never closes fails the test instead of hanging it.
            client.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
            client.arguments = ["10", "openssl", "s_client", "-quiet", "-ign_eof", "-connect", "127.0.0.1:\(port)"]
            let input = Pipe()
            let output = Pipe()
            client.standardInput = input
            client.standardOutput = output
            client.standardError = FileHandle.nullDevice
            try client.run()
            input.fileHandleForWriting.write(Data(request.utf8))
            try input.fileHandleForWriting.close()
            let answer = output.fileHandleForReading.readDataToEndOfFile()
            client.waitUntilExit()
            return String(decoding: answer, as: UTF8.self)
        }
    }
}
