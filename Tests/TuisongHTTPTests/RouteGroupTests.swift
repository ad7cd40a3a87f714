import Foundation
import Synchronization
import Testing

@testable import TuisongHTTP

/// Easemob-like: `/{org}/{app}/…` exists only for the configured pairs, and answers errors
/// as `{"error": "<code>", "error_description": "…"}`.
private let easemobErrors: ErrorResponder = { error, _ in
    .json(object: ["error": "em_\(error.code)", "error_description": error.message], status: error.status)
}

/// The configured org/app pairs, changed while the server runs (an app configured later).
private final class ConfiguredPairs: Sendable {
    private let pairs = Mutex<Set<String>>(["acme/chat"])

    func add(_ pair: String) { pairs.withLock { _ = $0.insert(pair) } }

    /// Whether the first two segments of `path` are a configured pair.
    func claims(_ path: String) -> Bool {
        let segments = path.split(separator: "/", omittingEmptySubsequences: true)
        guard segments.count >= 2 else { return false }
        let pair = "\(segments[0])/\(segments[1])"
        return pairs.withLock { $0.contains(pair) }
    }
}

@Suite("Route groups")
struct RouteGroupTests {
    private func makeRouter(_ pairs: ConfiguredPairs = ConfiguredPairs(), bodyLimit: Int = 1 << 20) -> Router {
        let router = Router(defaultBodyLimit: bodyLimit)
        router.add(.GET, "/api/v1/devices/{token}", handler: named("native-device"))
        router.add(.POST, "/api/v1/push", handler: named("native-push"))
        router.addGroup(name: "easemob", claims: { pairs.claims($0) }, errorResponder: easemobErrors) { group in
            group.add(.POST, "/{org}/{app}/token", handler: named("em-token"))
            group.add(.GET, "/{org}/{app}/users/{user}", handler: named("em-user"))
            group.add(.POST, "/{org}/{app}/messages", bodyLimit: 16, handler: named("em-messages"))
        }
        return router
    }

    private func respond(_ router: Router, _ method: HTTPMethod, _ target: String, body: [UInt8] = []) async throws
        -> Response
    {
        await router.respond(to: try Request(method: method, target: target, body: body))
    }

    private func json(_ response: Response) throws -> [String: Any] {
        try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] ?? [:]
    }

    @Test("a group's routes answer only on paths it claims; elsewhere the path is nobody's")
    func claimsDecide() async throws {
        let pairs = ConfiguredPairs()
        let router = makeRouter(pairs)
        let token = try await respond(router, .POST, "/acme/chat/token")
        #expect(try routeName(token) == "em-token")
        let user = try await respond(router, .GET, "/acme/chat/users/u1")
        #expect(try json(user)["params"] as? [String: String] == ["org": "acme", "app": "chat", "user": "u1"])

        // Not configured: the group's routes do not exist there, the native 404 answers.
        let other = try await respond(router, .POST, "/other/app/token")
        #expect(other.status == 404)
        #expect(try errorCode(other) == "not_found")

        // Configured later: claimed from then on, without registering again.
        pairs.add("other/app")
        #expect(try routeName(try await respond(router, .POST, "/other/app/token")) == "em-token")
    }

    @Test("404, 405 and 413 on a claimed path are in the group's dialect; native paths keep theirs")
    func errorsInTheGroupsDialect() async throws {
        let router = makeRouter()
        let missing = try await respond(router, .GET, "/acme/chat/nothing/here")
        #expect(missing.status == 404)
        #expect(try json(missing)["error"] as? String == "em_not_found")

        let wrongMethod = try await respond(router, .DELETE, "/acme/chat/token")
        #expect(wrongMethod.status == 405)
        #expect(try json(wrongMethod)["error"] as? String == "em_method_not_allowed")
        #expect(wrongMethod.headers["Allow"] == "OPTIONS, POST")

        let tooLarge = try await respond(router, .POST, "/acme/chat/messages", body: Array(repeating: 1, count: 17))
        #expect(tooLarge.status == 413)
        #expect(try json(tooLarge)["error"] as? String == "em_payload_too_large")

        let nativeMissing = try await respond(router, .GET, "/api/v1/nothing")
        #expect(try errorCode(nativeMissing) == "not_found")
        let nativeMethod = try await respond(router, .DELETE, "/api/v1/push")
        #expect(try errorCode(nativeMethod) == "method_not_allowed")
    }

    @Test("routes outside any group win: a group cannot take over a native path")
    func nativeRoutesWin() async throws {
        let pairs = ConfiguredPairs()
        pairs.add("api/v1")
        let router = makeRouter(pairs)
        #expect(try routeName(try await respond(router, .GET, "/api/v1/devices/abc")) == "native-device")
        #expect(try routeName(try await respond(router, .POST, "/api/v1/push")) == "native-push")
        // What no native route matches under the claimed pair is the group's.
        #expect(try routeName(try await respond(router, .POST, "/api/v1/token")) == "em-token")
    }

    @Test("a handler's Response.error is rendered in its group's dialect; adding a group again replaces it")
    func handlerErrorsAndReplacement() async throws {
        let router = Router()
        router.addGroup(name: "g", claims: { $0.hasPrefix("/g/") }, errorResponder: easemobErrors) { group in
            group.add(.GET, "/g/fail") { _ in .error(.badRequest("nope")) }
            group.add(.GET, "/g/old", handler: named("old"))
        }
        let failed = try await respond(router, .GET, "/g/fail")
        #expect(failed.status == 400)
        #expect(try json(failed)["error_description"] as? String == "nope")
        #expect(try routeName(try await respond(router, .GET, "/g/old")) == "old")

        router.addGroup(name: "g", claims: { $0.hasPrefix("/g/") }, errorResponder: easemobErrors) { group in
            group.add(.GET, "/g/new", handler: named("new"))
        }
        #expect(try routeName(try await respond(router, .GET, "/g/new")) == "new")
        #expect(try await respond(router, .GET, "/g/old").status == 404)
    }

    @Test("groups are asked before prefix responders; the prefix form still renders routes added with add")
    func prefixIsAConvenience() async throws {
        let router = Router()
        router.add(.POST, "/rest/3.0/{class}/{method}", handler: named("baidu3"))
        router.setErrorResponder(forPrefix: "/rest/") { error, _ in
            .json(object: ["error_code": 30600, "error_msg": error.message], status: error.status)
        }
        router.addGroup(name: "special", claims: { $0.hasPrefix("/rest/special/") }, errorResponder: easemobErrors) {
            _ in
        }
        let baidu = try await respond(router, .GET, "/rest/3.0/push/all")
        #expect(baidu.status == 405)
        #expect(try json(baidu)["error_code"] as? Int == 30600)
        let special = try await respond(router, .GET, "/rest/special/x")
        #expect(try json(special)["error"] as? String == "em_not_found")
    }

    @Test("over a real socket: the 404, 405 and 413 the server itself produces on a claimed path")
    func overTheServer() async throws {
        let router = makeRouter(bodyLimit: 64)
        try await withServer(router: router) { server in
            let port = server.port
            let missing = try await fetch(port: port, "GET", "/acme/chat/nothing")
            #expect(missing.status == 404)
            #expect(try missing.json()["error"] as? String == "em_not_found")

            let wrongMethod = try await fetch(port: port, "PUT", "/acme/chat/token", body: Array("{}".utf8))
            #expect(wrongMethod.status == 405)
            #expect(try wrongMethod.json()["error"] as? String == "em_method_not_allowed")
            #expect(wrongMethod.header("Allow") == "OPTIONS, POST")

            // A declared body over the route's limit: answered before the body is sent to a
            // client waiting for 100-continue, after it is read to one that sends it.
            try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(
                    "POST /acme/chat/messages HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\nExpect: 100-continue\r\n\r\n"
                )
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(try response.json()["error"] as? String == "em_payload_too_large")
            }
            try await offPool {
                let client = try RawHTTPClient(port: port)
                try client.send(
                    "POST /acme/chat/messages HTTP/1.1\r\nHost: a\r\nContent-Length: 5000\r\n\r\n"
                        + String(repeating: "x", count: 5000))
                let response = try client.readResponse()
                #expect(response.status == 413)
                #expect(try response.json()["error"] as? String == "em_payload_too_large")
            }
            let ok = try await fetch(port: port, "POST", "/acme/chat/token", body: Array("{}".utf8))
            #expect(ok.status == 200)
            #expect(try ok.json()["route"] as? String == "em-token")
            let native = try await fetch(port: port, "GET", "/nothing")
            #expect(try (native.json()["error"] as? [String: Any])?["code"] as? String == "not_found")
        }
    }
}
