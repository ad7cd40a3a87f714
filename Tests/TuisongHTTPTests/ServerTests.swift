import Foundation
import Synchronization
import Testing

@testable import TuisongHTTP

struct Echo: Codable, Sendable, Equatable {
    var name: String
    var count: Int
}

/// An actor hop forces the handler to really suspend, exercising suspend/resume.
actor Counter {
    var value = 0
    func next() -> Int {
        value += 1
        return value
    }
}

@Suite("HTTPServer over loopback")
struct ServerTests {
    @Test("GET with path parameters, query, headers and remote address")
    func basicGet() async throws {
        let router = Router()
        router.add(.GET, "/api/v1/devices/{token}") { request in
            .json(object: [
                "token": request.pathParameters["token"] ?? "",
                "q": request.query["q"] ?? "",
                "tags": request.query.values(for: "tag"),
                "agent": request.headers["x-client"] ?? "",
                "remote": request.remoteAddress ?? "",
                "path": request.path,
                "raw": request.rawTarget,
                "tls": request.isTLS,
            ])
        }
        try await withServer(router: router) { server in
            let response = try await fetch(
                port: server.port, "GET", "/api/v1/devices/ab%2Fc%20d?q=hello+world%21&tag=a&tag=b",
                headers: [("X-Client", "tests")])
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "application/json; charset=utf-8")
            let json = try response.json()
            #expect(json["token"] as? String == "ab/c d")
            #expect(json["q"] as? String == "hello world!")
            #expect(json["tags"] as? [String] == ["a", "b"])
            #expect(json["agent"] as? String == "tests")
            #expect(json["remote"] as? String == "127.0.0.1")
            #expect(json["path"] as? String == "/api/v1/devices/ab/c d")
            #expect(
                json["raw"] as? String == "/api/v1/devices/ab%2Fc%20d?q=hello+world%21&tag=a&tag=b")
            #expect(json["tls"] as? Bool == false)
        }
    }

    @Test("PUT with a JSON body, answered after a real suspension")
    func jsonPut() async throws {
        let router = Router()
        let counter = Counter()
        router.add(.PUT, "/items/{id}") { request in
            do throws(HTTPError) {
                var echo = try request.decodeJSON(Echo.self)
                echo.count += await counter.next()
                return .json(echo, status: 201)
            } catch {
                return .error(error)
            }
        }
        try await withServer(router: router) { server in
            let body = Array(#"{"name":"喂 world","count":41}"#.utf8)
            let response = try await fetch(
                port: server.port, "PUT", "/items/7",
                headers: [("Content-Type", "application/json")],
                body: body)
            #expect(response.status == 201)
            #expect(response.text == #"{"count":42,"name":"喂 world"}"#)

            let wrongType = try await fetch(
                port: server.port, "PUT", "/items/7", headers: [("Content-Type", "text/plain")],
                body: body)
            #expect(wrongType.status == 415)
            let error = try wrongType.json()["error"] as? [String: Any]
            #expect(error?["code"] as? String == "unsupported_media_type")

            let malformed = try await fetch(
                port: server.port, "PUT", "/items/7",
                headers: [("Content-Type", "application/json")],
                body: Array(#"{"name": "x", "#.utf8))
            #expect(malformed.status == 400)
            let invalidUTF8 = try await fetch(
                port: server.port, "PUT", "/items/7",
                headers: [("Content-Type", "application/json")],
                body: Array(#"{"name":""#.utf8) + [0xC3, 0x28] + Array(#"","count":1}"#.utf8))
            #expect(invalidUTF8.status == 400)
            #expect(invalidUTF8.text.contains("UTF-8"))
        }
    }
}

/// A router with the routes most server tests use.
func standardRouter() -> Router {
    let router = Router()
    let counter = Counter()
    router.add(.GET, "/inline") { _ in .text("inline") }
    router.add(.GET, "/suspend") { _ in
        let value = await counter.next()
        return .text("suspend \(value)")
    }
    router.add(.GET, "/echo/{id}") { request in
        try? await Task.sleep(for: .milliseconds(50))
        return .text(request.pathParameters["id"] ?? "")
    }
    router.add(.POST, "/upload", bodyLimit: 1000) { request in
        .text("got \(request.body.count)")
    }
    router.add(.GET, "/bad-header") { _ in
        Response(status: 200, headers: ["X-Evil": "a\r\nInjected: yes"], body: Array("x".utf8))
    }
    router.add(.GET, "/bad-status") { _ in Response(status: 42) }
    return router
}

@Suite("HTTPServer connection handling")
struct ConnectionTests {
    @Test("keep-alive carries several requests, inline and suspending, errors included")
    func keepAlive() async throws {
        try await withServer(router: standardRouter()) { server in
            let port = server.port
            try await offPool {
                let client = try RawHTTPClient(port: port)
                let first = try client.request("GET", "/inline")
                #expect(first.text == "inline")
                #expect(first.header("Connection") == nil)
                #expect(try client.request("GET", "/suspend").text == "suspend 1")
                let missing = try client.request("GET", "/missing")
                #expect(missing.status == 404)
                #expect(missing.header("Connection") == nil)
                let notAllowed = try client.request("DELETE", "/inline")
                #expect(notAllowed.status == 405)
                #expect(notAllowed.header("Allow") == "GET, HEAD, OPTIONS")
                let badPath = try client.request("GET", "/x/%FF")
                #expect(badPath.status == 400)
                #expect(try client.request("GET", "/suspend").text == "suspend 2")
                #expect(
                    try client.request("POST", "/upload", body: Array(repeating: 65, count: 1000))
                        .text == "got 1000")
                #expect(try client.request("GET", "/inline").text == "inline")
            }
        }
    }

    @Test("pipelined requests are answered in order")
    func pipelining() async throws {
        try await withServer(router: standardRouter()) { server in
            let port = server.port
            try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(
                    "GET /echo/1 HTTP/1.1\r\nHost: a\r\n\r\nGET /inline HTTP/1.1\r\nHost: a\r\n\r\nGET /echo/3 HTTP/1.1\r\nHost: a\r\n\r\n"
                )
                #expect(try client.readResponse().text == "1")
                #expect(try client.readResponse().text == "inline")
                #expect(try client.readResponse().text == "3")
            }
        }
    }

    @Test("HEAD answers the GET route's headers without a body")
    func head() async throws {
        try await withServer(router: standardRouter()) { server in
            let port = server.port
            try await offPool {
                let client = try RawHTTPClient(port: port)
                let head = try client.request("HEAD", "/suspend")
                #expect(head.status == 200)
                #expect(head.header("Content-Length") == "9")
                #expect(head.header("Content-Type") == "text/plain; charset=utf-8")
                // Had a body been sent, it would now be parsed as the next status line.
                #expect(try client.request("GET", "/inline").text == "inline")
            }
            let curlHead = try await curl(["-I", "http://127.0.0.1:\(port)/inline"])
            #expect(curlHead.output.hasPrefix("HTTP/1.1 200"))
            #expect(curlHead.output.lowercased().contains("content-length: 6"))
        }
    }

    @Test(
        "a declared body over the route's limit: 413 before it is sent to a client that waits for 100-continue, after it is read to one that sends it, cut off far over"
    )
    func contentLengthLimit() async throws {
        try await withServer(router: standardRouter()) { server in
            let port = server.port
            try await offPool {
                let client = try RawHTTPClient(port: port)
                // Only the headers go out: the answer must not wait for the 5000 bytes.
                try client.send(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(response.header("Connection")?.lowercased() == "close")
                let error = try response.json()["error"] as? [String: Any]
                #expect(error?["code"] as? String == "payload_too_large")
                #expect(try client.waitsForClose())
            }
            try await offPool {
                // Headers and body at once, as most clients send them: the body is read and
                // dropped, the 413 follows, and the connection carries the next request.
                let client = try RawHTTPClient(port: port)
                try client.send(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n"
                        + String(repeating: "x", count: 5000))
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(response.header("Connection")?.lowercased() != "close")
                #expect((try response.json()["error"] as? [String: Any])?["code"] as? String == "payload_too_large")
                #expect(try client.request("POST", "/upload", body: [1, 2]).text == "got 2")
            }
            try await offPool {
                // Far over the limit (more than the 1 MiB it would read and drop): cut off at once.
                let client = try RawHTTPClient(port: port)
                try client.send("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 50000000\r\n\r\n")
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(response.header("Connection")?.lowercased() == "close")
                #expect(try client.waitsForClose())
            }
            let after = try await fetch(
                port: port, "POST", "/upload", body: Array(repeating: 1, count: 10))
            #expect(after.text == "got 10")
        }
    }

    @Test("accepted chunked bodies: past the limit, 413 if it ends soon, else cut off")
    func chunkedLimit() async throws {
        let handled = Counter()
        let router = Router()
        router.add(.POST, "/upload", bodyLimit: 1000) { request in
            _ = await handled.next()
            return .text("got \(request.body.count)")
        }
        try await withServer({ $0.chunkedRequests = .accept }, router: router) { server in
            let port = server.port
            @Sendable func chunked(_ sizes: [Int]) -> String {
                var text = "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"
                for size in sizes {
                    text +=
                        String(size, radix: 16) + "\r\n" + String(repeating: "a", count: size)
                        + "\r\n"
                }
                return text + "0\r\n\r\n"
            }
            try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(chunked(Array(repeating: 100, count: 10)))
                #expect(try client.readResponse().text == "got 1000")
                // 1500 bytes: over the limit but soon over; a proper 413, connection kept.
                try client.send(chunked(Array(repeating: 100, count: 15)))
                let tooLarge = try client.readResponse()
                #expect(tooLarge.status == 413)
                #expect(
                    try tooLarge.json()["error"].flatMap { $0 as? [String: Any] }?["code"]
                        as? String == "payload_too_large")
                #expect(try client.request("POST", "/upload", body: [1]).text == "got 1")
            }
            // An endless chunked body: the server stops reading and closes the connection.
            let sent = try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
                let chunk = "1000\r\n" + String(repeating: "b", count: 4096) + "\r\n"
                var sent = 0
                while sent < 50_000_000 {
                    do {
                        try client.send(chunk)
                    } catch {
                        break
                    }
                    sent += 4096
                }
                return sent
            }
            #expect(sent < 5_000_000)
            #expect(await handled.value == 2)
            #expect(
                try await fetch(port: port, "POST", "/upload", body: [1, 2, 3]).text == "got 3")
            #expect(await eventually { server.liveRequestCount == 0 })
        }
    }

    @Test(
        "requests within maxHeaderBytes pass; far larger URLs get 414, headers 431; serving goes on"
    )
    func headerLimits() async throws {
        let router = Router()
        // A response with headers of its own: they too need room in the connection's pool.
        router.add(.GET, "/inline") { _ in
            Response(
                headers: HTTPHeaders(
                    (0..<20).map { ("X-Response-\($0)", String(repeating: "r", count: 50)) }),
                body: Array("inline".utf8))
        }
        try await withServer({ $0.maxHeaderBytes = 16 * 1024 }, router: router) { server in
            let port = server.port
            let budget = 16 * 1024 - 100
            let bigHeader = try await fetch(
                port: port, "GET", "/inline",
                headers: [("X-Pad", String(repeating: "h", count: budget))])
            #expect(bigHeader.status == 200)
            let longURL = try await fetch(
                port: port, "GET", "/inline?pad=" + String(repeating: "u", count: budget))
            #expect(longURL.status == 200)
            let mixed = try await fetch(
                port: port, "GET", "/inline?pad=" + String(repeating: "u", count: budget / 2),
                headers: (0..<(budget / 2 / 100)).map {
                    ("X-Header-\($0)", String(repeating: "v", count: 85))
                })
            #expect(mixed.status == 200)
            #expect(mixed.text == "inline")

            let tooLongURL = try await fetch(
                port: port, "GET", "/inline?pad=" + String(repeating: "u", count: 40_000))
            #expect(tooLongURL.status == 414)
            let tooBigHeader = try await fetch(
                port: port, "GET", "/inline",
                headers: [("X-Pad", String(repeating: "h", count: 40_000))])
            #expect(tooBigHeader.status == 431)
            let tooManyHeaders = try await fetch(
                port: port, "GET", "/inline",
                headers: (0..<500).map { ("X-Header-\($0)", String(repeating: "v", count: 70)) })
            #expect(tooManyHeaders.status == 431)
            #expect(try await fetch(port: port, "GET", "/inline").text == "inline")
            #expect(await eventually { server.liveRequestCount == 0 })
        }
    }

    @Test("a silent connection is closed after the idle timeout")
    func idleTimeout() async throws {
        try await withServer({ $0.connectionTimeout = 1 }, router: standardRouter()) { server in
            let port = server.port
            let (closed, partialClosed) = try await offPool {
                let silent = try RawHTTPClient(port: port)
                let partial = try RawHTTPClient(port: port)
                try partial.send("GET /inline HTTP/1.1\r\nHost: a\r\n")
                return (try silent.waitsForClose(), try partial.waitsForClose())
            }
            #expect(closed)
            #expect(partialClosed)
            #expect(try await fetch(port: port, "GET", "/inline").text == "inline")
        }
    }

    @Test("a header the MHD layer refuses, or a bad status, becomes a 500")
    func invalidResponses() async throws {
        try await withServer(router: standardRouter()) { server in
            let evil = try await fetch(port: server.port, "GET", "/bad-header")
            #expect(evil.status == 500)
            #expect(evil.header("Injected") == nil)
            let status = try await fetch(port: server.port, "GET", "/bad-status")
            #expect(status.status == 500)
        }
    }

    @Test("malformed requests get an error or a close, never a crash")
    func malformed() async throws {
        // An idle timeout bounds the requests libmicrohttpd keeps waiting on (e.g. NULs it
        // reads as blank lines before a request line).
        try await withServer({ $0.connectionTimeout = 2 }, router: standardRouter()) {
            (server: HTTPServer) async throws in
            let port = server.port
            let garbage: [[UInt8]] = [
                Array("GARBAGE\r\n\r\n".utf8),
                Array("GET\r\n\r\n".utf8),
                Array("GET /inline HTTP/9.9\r\nHost: a\r\n\r\n".utf8),
                Array("GET /inline HTTP/1.1\r\nNo colon here\r\n\r\n".utf8),
                Array("GET /in\0line HTTP/1.1\r\nHost: a\r\n\r\n".utf8),
                [0x47, 0x45, 0x54, 0x20, 0x2F, 0xFF, 0xFE, 0x20]
                    + Array("HTTP/1.1\r\nHost: a\r\n\r\n".utf8),
                Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8),
                Array(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n"
                        .utf8),
                Array(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcdefghij\r\n0\r\n\r\n"
                        .utf8),
                Array("POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: -5\r\n\r\n".utf8),
                Array(
                    "POST /upload HTTP/1.1\r\nHost: a\r\nContent-Length: 99999999999999999999999\r\n\r\n"
                        .utf8),
                Array(repeating: 0, count: 100),
                Array(repeating: 0, count: 100) + Array("\r\n\r\n".utf8),
                Array(repeating: 0xFF, count: 100) + Array("\r\n\r\n".utf8),
            ]
            for bytes in garbage {
                let label = String(decoding: bytes.prefix(40), as: UTF8.self).debugDescription
                do {
                    // Either a complete response or a close without one; a half-parsed answer
                    // or silence until the receive timeout fails.
                    let answer = try await offPool {
                        let client = try RawHTTPClient(port: port, receiveTimeout: 5)
                        try? client.send(bytes)
                        return try client.readResponseOrClose()
                    }
                    if let answer {
                        #expect((400..<600).contains(answer.status), "\(label): \(answer.status)")
                    }
                } catch {
                    Issue.record("\(label): \(error)")
                }
                #expect(try await fetch(port: port, "GET", "/inline").text == "inline")
            }
            #expect(await eventually { server.liveRequestCount == 0 })
        }
    }

    @Test("raw invalid UTF-8 in the path is a 400 in the route's dialect")
    func rawInvalidPath() async throws {
        let router = standardRouter()
        router.setErrorResponder(forPrefix: "/rest/") { error, _ in
            .json(object: ["error_code": 30600, "error_msg": error.message], status: error.status)
        }
        try await withServer(router: router) { server in
            let port = server.port
            let response = try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(
                    Array("GET /rest/".utf8) + [0xC3, 0x28]
                        + Array(" HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
                return try client.readResponse()
            }
            #expect(response.status == 400)
            #expect(try response.json()["error_code"] as? Int == 30600)
            let escaped = try await fetch(port: port, "GET", "/rest/%C3%28")
            #expect(escaped.status == 400)
            #expect(try escaped.json()["error_code"] as? Int == 30600)
        }
    }
}
