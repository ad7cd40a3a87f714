import Foundation
import Synchronization
import Testing
import TuisongHTTP
import TuisongHTTPClient
import TuisongPluginTestKit

@Suite("HTTPClient over HTTP/1.1 (libmicrohttpd on loopback)")
struct HTTP1Tests {
    private func echoRouter() -> Router {
        let router = Router()
        let echo: Handler = { request in
            var response = Response.json(
                object: [
                    "method": request.method.rawValue,
                    "path": request.rawTarget,
                    "body": String(decoding: request.body, as: UTF8.self),
                    "contentType": request.headers["content-type"] ?? "",
                    "custom": request.headers["x-custom"] ?? "",
                    "agent": request.headers["user-agent"] ?? "",
                    "expect": request.headers["expect"] ?? "",
                ], status: request.method == .POST ? 201 : 200)
            response.headers.add(name: "X-Reply", value: "yes")
            response.headers.add(name: "X-Reply", value: "second")
            return response
        }
        router.add(.GET, "/echo", handler: echo)
        router.add(.POST, "/echo", handler: echo)
        router.add(.PUT, "/echo", handler: echo)
        router.add(.DELETE, "/echo", handler: echo)
        router.add(.HEAD, "/echo", handler: echo)
        return router
    }

    private func json(_ response: HTTPClientResponse) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
    }

    @Test("GET and POST: method, body, headers and status round-trip; response headers read")
    func roundTrip() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(label: "test-http1")
            defer { client.shutdown() }
            let base = "http://127.0.0.1:\(server.port)"

            let get = try await client.execute(
                HTTPClientRequest(method: "GET", url: "\(base)/echo?q=1", headers: [("X-Custom", "hello")])
            ).get()
            #expect(get.status == 200)
            #expect(get.httpVersion == 1)
            #expect(get.header("x-reply") == "yes")
            #expect(get.header("X-REPLY") == "yes")
            #expect(get.headers.filter { $0.name == "x-reply" }.map(\.value) == ["yes", "second"])
            #expect(get.header("Content-Type") == "application/json; charset=utf-8")
            #expect(get.headers.allSatisfy { $0.name == $0.name.lowercased() })
            let getEcho = try json(get)
            #expect(getEcho["method"] as? String == "GET")
            #expect(getEcho["path"] as? String == "/echo?q=1")
            #expect(getEcho["custom"] as? String == "hello")
            #expect(getEcho["agent"] as? String == "tuisong")

            // Over 1 KB: no Expect: 100-continue round trip.
            let text = #"{"message":"推送 \#(String(repeating: "x", count: 2000))"}"#
            let post = try await client.execute(
                HTTPClientRequest(
                    url: "\(base)/echo", headers: [("Content-Type", "application/json"), ("X-Custom", "")],
                    body: Array(text.utf8))
            ).get()
            #expect(post.status == 201)
            let postEcho = try json(post)
            #expect(postEcho["method"] as? String == "POST")
            #expect(postEcho["body"] as? String == text)
            #expect(postEcho["contentType"] as? String == "application/json")
            #expect(postEcho["expect"] as? String == "")

            let form = try await client.execute(
                HTTPClientRequest(url: "\(base)/echo", body: FormEncoding.encode([("a", "b c")]))
            ).get()
            #expect(try json(form)["contentType"] as? String == "application/x-www-form-urlencoded")
            #expect(try json(form)["body"] as? String == "a=b+c")

            let put = try await client.execute(
                HTTPClientRequest(method: "PUT", url: "\(base)/echo", body: Array("p".utf8))
            ).get()
            #expect(try json(put)["method"] as? String == "PUT")
            #expect(try json(put)["body"] as? String == "p")
            // The one easy handle is reused: nothing of the PUT (method, body) may stick.
            let delete = try await client.execute(HTTPClientRequest(method: "DELETE", url: "\(base)/echo")).get()
            #expect(try json(delete)["method"] as? String == "DELETE")
            #expect(try json(delete)["body"] as? String == "")
            let head = try await client.execute(HTTPClientRequest(method: "HEAD", url: "\(base)/echo")).get()
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            let again = try await client.execute(HTTPClientRequest(method: "GET", url: "\(base)/echo")).get()
            #expect(try json(again)["method"] as? String == "GET")
            #expect(try json(again)["body"] as? String == "")
            #expect(try json(again)["custom"] as? String == "")

            let missing = try await client.execute(HTTPClientRequest(method: "GET", url: "\(base)/nowhere")).get()
            #expect(missing.status == 404)

            let statistics = client.statistics
            #expect(statistics.requestsStarted == 8)
            #expect(statistics.requestsCompleted == 8)
            #expect(statistics.requestsFailed == 0)
            #expect(statistics.inFlight == 0)
        }
    }

    @Test("sequential requests reuse one kept-alive connection")
    func keepAlive() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(label: "test-keepalive")
            for index in 0..<50 {
                let response = try await client.execute(
                    HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/echo?n=\(index)")
                ).get()
                #expect(response.status == 200)
            }
            let statistics = client.statistics
            #expect(statistics.requestsCompleted == 50)
            #expect(statistics.connectionsOpened == 1)
            #expect(statistics.openConnections == 1)
            client.shutdown()
            #expect(client.statistics.openConnections == 0)
        }
    }

    @Test("a timeout too large to count in nanoseconds is as good as none; a zero one fails at once")
    func extremeTimeouts() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(label: "test-extremes")
            defer { client.shutdown() }
            let url = "http://127.0.0.1:\(server.port)/echo"
            let long = await client.execute(HTTPClientRequest(method: "GET", url: url, timeout: .seconds(Int64.max)))
            #expect((try? long.get().status) == 200)
            let zero = await client.execute(HTTPClientRequest(method: "GET", url: url, timeout: .zero))
            #expect(zero.failureCode == "Timeout")
        }
    }

    @Test("concurrent HTTP/1.1 requests stay within maxConnectionsPerHost")
    func connectionLimit() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(configuration: .init(maxConnectionsPerHost: 2), label: "test-limit")
            defer { client.shutdown() }
            let statuses = await withTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let result = await client.execute(
                            HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/echo?n=\(index)"))
                        return (try? result.get().status) ?? -1
                    }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(statuses == Array(repeating: 200, count: 40))
            #expect(client.statistics.connectionsOpened <= 2)
        }
    }

    @Test("a closed port fails ConnectFailed; an unknown host ResolveFailed; a bad scheme Other")
    func connectFailures() async throws {
        let client = try HTTPClient(label: "test-refused")
        defer { client.shutdown() }
        let port = try closedPort()
        let refused = await client.execute(HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(port)/"))
        #expect(refused.failureCode == "ConnectFailed")
        if case .failure(let error) = refused { #expect(!error.detail.isEmpty) }

        let unresolved = await client.execute(HTTPClientRequest(method: "GET", url: "http://nowhere.invalid/"))
        #expect(unresolved.failureCode == "ResolveFailed")

        let file = await client.execute(HTTPClientRequest(method: "GET", url: "file:///etc/passwd"))
        #expect(file.failureCode == "Other")

        #expect(client.statistics.requestsFailed == 3)
        #expect(client.statistics.requestsCompleted == 0)
        #expect(client.statistics.openConnections == 0)
    }

    @Test("a server that never answers: Timeout, in flight and in the queue")
    func timeout() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(maxInFlight: 1), label: "test-timeout")
        defer { client.shutdown() }
        let url = "http://127.0.0.1:\(listener.port)/"
        async let first = client.execute(HTTPClientRequest(method: "GET", url: url, timeout: .milliseconds(300)))
        // Queued behind the first (one in flight at most): its timeout runs in the queue too.
        async let second = client.execute(HTTPClientRequest(method: "GET", url: url, timeout: .milliseconds(200)))
        let results = await [first, second]
        #expect(results.map(\.failureCode) == ["Timeout", "Timeout"])
        #expect(client.statistics.requestsFailed == 2)
        #expect(client.statistics.inFlight == 0)
    }

    // curl 7.88 checks CURLOPT_TIMEOUT_MS only for a transfer that has a connection: this one
    // waits (PENDING) for the only connection allowed, held by a request that never ends, and
    // is failed by the client's own once-a-second sweep.
    @Test("a request parked waiting for a connection still times out")
    func pendingTimeout() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(maxConnectionsPerHost: 1), label: "test-pending")
        let url = "http://127.0.0.1:\(listener.port)/"
        let box = ResultBox()
        client.execute(HTTPClientRequest(method: "GET", url: url)) { box.append($0) }
        try await waitUntil("the first request holds the connection") {
            client.statistics.inFlight == 1 && client.statistics.openConnections == 1
        }
        let parked = await client.execute(HTTPClientRequest(method: "GET", url: url, timeout: .milliseconds(200)))
        #expect(parked.failureCode == "Timeout")
        #expect(box.count == 0)
        client.shutdown()
        #expect(box.all.map(\.failureCode) == ["Shutdown"])
    }

    /// Issue #40 item 6: an upstream that streams an endless answer (a body without end, a
    /// Content-Length of a terabyte, headers without end) is cut off at the request's bound and
    /// fails "ResponseTooLarge"; the client reads a few KB of it, not gigabytes.
    @Test("an endless or oversized answer fails ResponseTooLarge at its bound")
    func endlessAnswers() async throws {
        let client = try HTTPClient(label: "test-endless")
        defer { client.shutdown() }
        let chunked = try EndlessAnswerServer(
            head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
            filler: "4000\r\n" + String(repeating: " ", count: 0x4000) + "\r\n")
        defer { chunked.stop() }
        let endlessBody = await client.execute(
            HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(chunked.port)/", maxResponseBytes: 32 * 1024))
        #expect(endlessBody.failureCode == "ResponseTooLarge")
        // What the client read before closing, plus what the kernel's socket buffers took.
        #expect(chunked.bytesWritten < 16 * 1024 * 1024)

        let declared = try EndlessAnswerServer(
            head: "HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n", filler: "x")
        defer { declared.stop() }
        let huge = await client.execute(HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(declared.port)/"))
        #expect(huge.failureCode == "ResponseTooLarge")
        #expect(declared.bytesWritten < 16 * 1024 * 1024)

        let headers = try EndlessAnswerServer(head: "HTTP/1.1 200 OK\r\n", filler: "X-Filler: 0123456789abcdef\r\n")
        defer { headers.stop() }
        let endlessHeaders = await client.execute(
            HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(headers.port)/", responseHeaders: ["retry-after"])
        )
        #expect(endlessHeaders.failureCode == "ResponseTooLarge")
        #expect(headers.bytesWritten < 16 * 1024 * 1024)
        #expect(client.statistics.requestsFailed == 3)
    }

    /// An answer up to the bound is read whole; one byte over fails.
    @Test("the bound is exact")
    func answerAtTheBound() async throws {
        let router = Router()
        router.add(.GET, "/sized") { request in
            let size = Int(request.query["size"] ?? "0") ?? 0
            return Response(status: 200, body: [UInt8](repeating: 65, count: size))
        }
        try await withHTTPServer(router: router) { server in
            let client = try HTTPClient(label: "test-bound")
            defer { client.shutdown() }
            let url = "http://127.0.0.1:\(server.port)/sized?size="
            let atBound = await client.execute(
                HTTPClientRequest(method: "GET", url: url + "1000", maxResponseBytes: 1000))
            #expect(try atBound.get().body.count == 1000)
            let over = await client.execute(HTTPClientRequest(method: "GET", url: url + "1001", maxResponseBytes: 1000))
            #expect(over.failureCode == "ResponseTooLarge")
            // The default bound passes every answer a service documents.
            let ordinary = await client.execute(HTTPClientRequest(method: "GET", url: url + "4096"))
            #expect(try ordinary.get().body.count == 4096)
        }
    }

    @Test("shutdown fails in-flight and queued requests with Shutdown, is idempotent, refuses new ones")
    func shutdown() async throws {
        let listener = try SilentListener()
        let client = try HTTPClient(configuration: .init(maxInFlight: 1), label: "test-shutdown")
        let box = ResultBox()
        let url = "http://127.0.0.1:\(listener.port)/"
        for _ in 0..<4 {
            client.execute(HTTPClientRequest(method: "GET", url: url)) { box.append($0) }
        }
        try await waitUntil("one request in flight") {
            client.statistics.inFlight == 1 && client.statistics.openConnections == 1
        }
        #expect(box.count == 0)
        client.shutdown()
        // Every completion ran before shutdown returned.
        #expect(box.all.map(\.failureCode) == Array(repeating: "Shutdown", count: 4))
        client.shutdown()
        let late = await client.execute(HTTPClientRequest(method: "GET", url: url))
        #expect(late.failureCode == "Shutdown")
        let statistics = client.statistics
        #expect(statistics.requestsStarted == 1)
        #expect(statistics.requestsFailed == 5)
        #expect(statistics.inFlight == 0)
        #expect(statistics.openConnections == 0)
    }

    @Test("shutdown from a completion on the event thread does not deadlock")
    func shutdownFromCompletion() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(label: "test-self-stop")
            let result = await withCheckedContinuation { continuation in
                client.execute(HTTPClientRequest(method: "GET", url: "http://127.0.0.1:\(server.port)/echo")) {
                    result in
                    client.shutdown()
                    continuation.resume(returning: result)
                }
            }
            #expect((try? result.get().status) == 200)
            client.shutdown()
            #expect(client.statistics.openConnections == 0)
        }
    }

    @Test("a batch: each request answered once, under its index, answers grouped per pass")
    func batch() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            // One handle, reused for every request: shared header lists and the body buffer must
            // follow each request (same headers, then others, then none; bodies that outgrow it).
            let client = try HTTPClient(configuration: .init(maxInFlight: 1), label: "test-batch")
            defer { client.shutdown() }
            let url = "http://127.0.0.1:\(server.port)/echo"
            let shared: [(name: String, value: String)] = [("Content-Type", "application/json"), ("X-Custom", "a")]
            let requests = (0..<30).map { index -> HTTPClientRequest in
                let headers: [(name: String, value: String)] =
                    index < 10 ? shared : index < 20 ? [("X-Custom", "b\(index % 2)")] : []
                let body = index % 7 == 6 ? String(repeating: "\(index)", count: 1500) : "n=\(index)"
                return HTTPClientRequest(url: url, headers: headers, body: Array(body.utf8))
            }
            let (answers, calls) = await withCheckedContinuation { continuation in
                let collected = Mutex<(answers: [Int: Result<HTTPClientResponse, HTTPClientError>], calls: Int)>(
                    ([:], 0))
                client.execute(requests) { group in
                    let done = collected.withLock { state -> Bool in
                        state.calls += 1
                        for (index, result) in group {
                            #expect(state.answers[index] == nil, "request \(index) answered twice")
                            state.answers[index] = result
                        }
                        return state.answers.count == requests.count
                    }
                    if done { continuation.resume(returning: collected.withLock { ($0.answers, $0.calls) }) }
                }
            }
            #expect(calls >= 1 && calls <= requests.count)
            #expect(Set(answers.keys) == Set(0..<requests.count))
            for (index, request) in requests.enumerated() {
                let echo = try json(try #require(try answers[index]?.get()))
                #expect(echo["body"] as? String == String(decoding: request.body, as: UTF8.self))
                let custom = index < 10 ? "a" : index < 20 ? "b\(index % 2)" : ""
                #expect(echo["custom"] as? String == custom, "request \(index)")
                let contentType = index < 10 ? "application/json" : "application/x-www-form-urlencoded"
                #expect(echo["contentType"] as? String == contentType, "request \(index)")
            }
            #expect(client.statistics.requestsCompleted == requests.count)
            #expect(client.statistics.inFlight == 0)
        }
    }

    @Test("a batch after shutdown: every request fails Shutdown at once, in one call")
    func batchAfterShutdown() async throws {
        let client = try HTTPClient(label: "test-batch-stop")
        client.shutdown()
        let calls = Mutex<[[(index: Int, code: String?)]]>([])
        let request = HTTPClientRequest(method: "GET", url: "http://127.0.0.1:1/")
        client.execute([request, request, request]) { group in
            calls.withLock { $0.append(group.map { (index: $0.index, code: $0.result.failureCode) }) }
        }
        let seen = calls.withLock { $0 }
        #expect(seen.count == 1)
        #expect(seen.first?.map(\.index) == [0, 1, 2])
        #expect(seen.first?.map(\.code) == ["Shutdown", "Shutdown", "Shutdown"])
        #expect(client.statistics.requestsFailed == 3)
        // An empty batch has nothing to answer.
        client.execute([]) { _ in Issue.record("an empty batch was answered") }
    }

    @Test("responseHeaders keeps only the named headers, matched case-insensitively")
    func selectedResponseHeaders() async throws {
        try await withHTTPServer(router: echoRouter()) { server in
            let client = try HTTPClient(configuration: .init(maxInFlight: 1), label: "test-headers")
            defer { client.shutdown() }
            let url = "http://127.0.0.1:\(server.port)/echo"
            let named = try await client.execute(
                HTTPClientRequest(method: "GET", url: url, responseHeaders: ["X-REPLY", "retry-after"])
            ).get()
            #expect(named.status == 200)
            #expect(named.headers.map(\.name) == ["x-reply", "x-reply"])
            #expect(named.headers.map(\.value) == ["yes", "second"])
            #expect(named.header("Content-Type") == nil)
            #expect(try json(named)["method"] as? String == "GET")
            // A name that is a prefix of a sent one, or longer than it, is not that header.
            let prefix = try await client.execute(
                HTTPClientRequest(method: "GET", url: url, responseHeaders: ["x-rep", "x-reply-to", "content-typ"])
            ).get()
            #expect(prefix.headers.isEmpty)
            let none = try await client.execute(HTTPClientRequest(method: "GET", url: url, responseHeaders: []))
                .get()
            #expect(none.headers.isEmpty)
            // The same (reused) handle keeps every header again for a request that names none.
            let all = try await client.execute(HTTPClientRequest(method: "GET", url: url)).get()
            #expect(all.header("content-type") == "application/json; charset=utf-8")
            #expect(all.headers.filter { $0.name == "x-reply" }.count == 2)
        }
    }

    @Test("a header name or value with CR, LF or NUL fails InvalidHeader and is never sent; the value is not told")
    func headerInjectionRefused() async throws {
        let received = Mutex<[String]>([])
        let router = Router()
        router.add(.POST, "/count") { request in
            received.withLock { $0.append(request.headers["authorization"] ?? "") }
            return .json(object: [:])
        }
        try await withHTTPServer(router: router) { server in
            let client = try HTTPClient(configuration: .init(maxInFlight: 1), label: "test-injection")
            defer { client.shutdown() }
            let url = "http://127.0.0.1:\(server.port)/count"
            let unsafe: [(String, String)] = [
                ("authorization", "key=abc\r\nX-Injected: yes"), ("authorization", "key=abc\nX-Injected: yes"),
                ("authorization", "key=abc\rX"), ("authorization", "key=abc\u{0}tail"),
                ("X-Bad\r\nX-Injected", "yes"), ("X-Colon:", "yes"), ("", "empty name"),
            ]
            for header in unsafe {
                let result = await client.execute(HTTPClientRequest(method: "POST", url: url, headers: [header]))
                #expect(result.failureCode == "InvalidHeader", "\(header)")
                if case .failure(let error) = result {
                    #expect(!error.detail.contains("abc"), "the value is never told: \(error.detail)")
                    #expect(!error.detail.contains("\r") && !error.detail.contains("\n"))
                }
            }
            // The same handle then sends a safe request, with its own headers only.
            let safe = try await client.execute(
                HTTPClientRequest(method: "POST", url: url, headers: [("authorization", "key=abc")])
            ).get()
            #expect(safe.status == 200)
            #expect(received.withLock { $0 } == ["key=abc"])
        }
    }
}
