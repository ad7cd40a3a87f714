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
            #expect(json["raw"] as? String == "/api/v1/devices/ab%2Fc%20d?q=hello+world%21&tag=a&tag=b")
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
                return router.renderError(error, for: request)
            }
        }
        try await withServer(router: router) { server in
            let body = Array(#"{"name":"喂 world","count":41}"#.utf8)
            let response = try await fetch(
                port: server.port, "PUT", "/items/7", headers: [("Content-Type", "application/json")],
                body: body)
            #expect(response.status == 201)
            #expect(response.text == #"{"count":42,"name":"喂 world"}"#)

            let wrongType = try await fetch(
                port: server.port, "PUT", "/items/7", headers: [("Content-Type", "text/plain")], body: body)
            #expect(wrongType.status == 415)
            let error = try wrongType.json()["error"] as? [String: Any]
            #expect(error?["code"] as? String == "unsupported_media_type")

            let malformed = try await fetch(
                port: server.port, "PUT", "/items/7", headers: [("Content-Type", "application/json")],
                body: Array(#"{"name": "x", "#.utf8))
            #expect(malformed.status == 400)
            let invalidUTF8 = try await fetch(
                port: server.port, "PUT", "/items/7", headers: [("Content-Type", "application/json")],
                body: Array(#"{"name":""#.utf8) + [0xC3, 0x28] + Array(#"","count":1}"#.utf8))
            #expect(invalidUTF8.status == 400)
            #expect(invalidUTF8.text.contains("UTF-8"))
        }
    }
}
