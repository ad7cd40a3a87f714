import Foundation
import Testing

@testable import TuisongHTTP

/// A handler that names itself and echoes its parameters, to see which route answered.
func named(_ name: String) -> Handler {
    { request in
        .json(object: [
            "route": name, "params": request.pathParameters, "method": request.method.rawValue,
        ])
    }
}

func routeName(_ response: Response) throws -> String? {
    let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return object?["route"] as? String
}

func errorCode(_ response: Response) throws -> String? {
    let object = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
    return (object?["error"] as? [String: Any])?["code"] as? String
}

@Suite("Router")
struct RouterTests {
    func makeRouter() -> Router {
        let router = Router()
        router.add(.GET, "/api/v1/devices/{token}", handler: named("native-device"))
        router.add(.PUT, "/api/v1/devices/{token}", handler: named("native-device-put"))
        router.add(.GET, "/admin/api/apps", handler: named("admin-apps"))
        router.add(.GET, "/healthz", handler: named("healthz"))
        router.add(.POST, "/rest/3.0/{class}/{method}", handler: named("baidu3"))
        router.add(.POST, "/{org}/{app}/users", handler: named("easemob-users"))
        router.add(.GET, "/{org}/{app}/users/{user}", handler: named("easemob-user"))
        router.add(.GET, "/api/{version}/status", handler: named("api-status"))
        return router
    }

    func respond(_ router: Router, _ method: HTTPMethod, _ target: String) async throws -> Response {
        await router.respond(to: try Request(method: method, target: target))
    }

    @Test("a literal segment beats a parameter at the same depth")
    func literalWins() async throws {
        let router = makeRouter()
        let device = try await respond(router, .GET, "/api/v1/devices/abc")
        #expect(try routeName(device) == "native-device")
        let admin = try await respond(router, .GET, "/admin/api/apps")
        #expect(try routeName(admin) == "admin-apps")
        let easemob = try await respond(router, .POST, "/acme/chat/users")
        #expect(try routeName(easemob) == "easemob-users")
        let parameters =
            try JSONSerialization.jsonObject(with: Data(easemob.body)) as? [String: Any]
        #expect(parameters?["params"] as? [String: String] == ["org": "acme", "app": "chat"])
    }

    @Test("matching backtracks to the parameter branch when the literal branch dead-ends")
    func backtracking() async throws {
        let router = makeRouter()
        // "/api/v1/users" has no literal route; it is Easemob org "api", app "v1".
        let users = try await respond(router, .POST, "/api/v1/users")
        #expect(try routeName(users) == "easemob-users")
        // "/api/x/status": literal "api", then parameter {version}.
        let status = try await respond(router, .GET, "/api/x/status")
        #expect(try routeName(status) == "api-status")
        let user = try await respond(router, .GET, "/healthz/app/users/u1")
        #expect(try routeName(user) == "easemob-user")
    }

    @Test("unknown path is 404, wrong method is 405 with Allow; HEAD and OPTIONS are implied")
    func notFoundAndMethodNotAllowed() async throws {
        let router = makeRouter()
        let missing = try await respond(router, .GET, "/nope")
        #expect(missing.status == 404)
        #expect(try errorCode(missing) == "not_found")

        let wrongMethod = try await respond(router, .DELETE, "/api/v1/devices/abc")
        #expect(wrongMethod.status == 405)
        #expect(try errorCode(wrongMethod) == "method_not_allowed")
        #expect(wrongMethod.headers["Allow"] == "GET, HEAD, OPTIONS, PUT")

        let head = try await respond(router, .HEAD, "/healthz")
        #expect(head.status == 200)
        #expect(head.body.isEmpty)
        #expect(head.headers["Content-Length"].flatMap(Int.init).map { $0 > 0 } == true)

        let options = try await respond(router, .OPTIONS, "/healthz")
        #expect(options.status == 204)
        #expect(options.headers["Allow"] == "GET, HEAD, OPTIONS")
    }

    @Test("trailing slashes and empty segments do not matter; %2F stays inside a parameter")
    func slashes() async throws {
        let router = makeRouter()
        for target in ["/healthz/", "//healthz", "/healthz//"] {
            let response = try await respond(router, .GET, target)
            #expect(try routeName(response) == "healthz", "\(target)")
        }
        let root = try await respond(router, .GET, "/")
        #expect(root.status == 404)
        let encoded = try await respond(router, .GET, "/api/v1/devices/a%2Fb%3Fc")
        let object = try JSONSerialization.jsonObject(with: Data(encoded.body)) as? [String: Any]
        #expect(object?["params"] as? [String: String] == ["token": "a/b?c"])
        // A literal segment is compared after decoding.
        let escapedLiteral = try await respond(router, .GET, "/%68ealthz")
        #expect(try routeName(escapedLiteral) == "healthz")
    }

    @Test("registering the same method and pattern again replaces the handler")
    func replacement() async throws {
        let router = makeRouter()
        router.add(.GET, "/healthz", handler: named("healthz-2"))
        let response = try await respond(router, .GET, "/healthz")
        #expect(try routeName(response) == "healthz-2")
    }

    @Test("errors use the dialect of the longest matching prefix")
    func dialects() async throws {
        let router = makeRouter()
        router.setErrorResponder(forPrefix: "/rest/") { error, _ in
            .json(
                object: ["error_code": 30000 + error.status, "error_msg": error.message],
                status: error.status)
        }
        router.setErrorResponder(forPrefix: "/rest/3.0/push/") { error, _ in
            .json(object: ["push_error": error.code], status: error.status)
        }
        let baidu = try await respond(router, .GET, "/rest/2.0/channel/channel")
        #expect(baidu.status == 404)
        let baiduBody = try JSONSerialization.jsonObject(with: Data(baidu.body)) as? [String: Any]
        #expect(baiduBody?["error_code"] as? Int == 30404)

        let push = try await respond(router, .GET, "/rest/3.0/push/single_device")
        #expect(push.status == 405)
        #expect(push.headers["Allow"] == "OPTIONS, POST")
        let pushBody = try JSONSerialization.jsonObject(with: Data(push.body)) as? [String: Any]
        #expect(pushBody?["push_error"] as? String == "method_not_allowed")

        let native = try await respond(router, .GET, "/missing")
        #expect(try errorCode(native) == "not_found")
    }

    @Test("a handler answering Response.error gets the path's dialect")
    func errorResponses() async throws {
        let router = Router()
        router.setErrorResponder(forPrefix: "/rest/") { error, request in
            .json(object: ["error_msg": error.message, "path": request.path], status: error.status)
        }
        router.setErrorResponder(forPrefix: "/loop/") { error, _ in .error(error) }
        let failing: Handler = { _ in .error(.badRequest("channel_id is required")) }
        router.add(.POST, "/rest/2.0/channel/channel", handler: failing)
        router.add(.POST, "/api/v1/push", handler: failing)
        router.add(.POST, "/loop/x", handler: failing)

        let baidu = await router.respond(
            to: try Request(method: .POST, target: "/rest/2.0/channel/channel"))
        #expect(baidu.status == 400)
        #expect(baidu.error == nil)
        let object = try JSONSerialization.jsonObject(with: Data(baidu.body)) as? [String: Any]
        #expect(object?["error_msg"] as? String == "channel_id is required")
        #expect(object?["path"] as? String == "/rest/2.0/channel/channel")

        let native = await router.respond(to: try Request(method: .POST, target: "/api/v1/push"))
        #expect(native.status == 400)
        #expect(try errorCode(native) == "bad_request")
        let loop = await router.respond(to: try Request(method: .POST, target: "/loop/x"))
        #expect(try errorCode(loop) == "bad_request")
    }

    @Test("the route's body limit answers 413 before the handler")
    func bodyLimit() async throws {
        let router = Router(defaultBodyLimit: 10)
        router.add(.POST, "/small", handler: named("small"))
        router.add(.POST, "/large", bodyLimit: 100, handler: named("large"))
        let small = await router.respond(
            to: try Request(method: .POST, target: "/small", body: Array(repeating: 1, count: 11)))
        #expect(small.status == 413)
        #expect(try errorCode(small) == "payload_too_large")
        let large = await router.respond(
            to: try Request(method: .POST, target: "/large", body: Array(repeating: 1, count: 11)))
        #expect(try routeName(large) == "large")
    }

    @Test("a path that is not valid UTF-8 once decoded is rejected with 400")
    func invalidPath() throws {
        #expect(throws: HTTPError.self) { try Request(method: .GET, target: "/a/%FF") }
        #expect(throws: HTTPError.self) { try Request(method: .GET, target: "/a/%C3%28") }
        #expect(throws: HTTPError.self) { try Request(method: .GET, target: "/a/%G1") }
        #expect(throws: HTTPError.self) { try Request(method: .GET, target: "/a?x=%") }
        let absolute = try Request(method: .GET, target: "http://example.com/a/b?c=1")
        #expect(absolute.path == "/a/b")
        #expect(absolute.query["c"] == "1")
    }
}

@Suite("Paths with empty segments")
struct EmptySegmentTests {
    @Test("runs of slashes are one slash in the path every dialect and prefix check reads")
    func collapsed() throws {
        #expect(try Request(method: .GET, target: "//admin/api/x").path == "/admin/api/x")
        #expect(try Request(method: .GET, target: "/a//b///c/").path == "/a/b/c/")
        #expect(try Request(method: .GET, target: "//").path == "/")
        #expect(try Request(method: .GET, target: "/a/%2F/b").path == "/a///b")  // decoded, not collapsed
        #expect(try Request(method: .GET, target: "http://host//rest//x?y=1").path == "/rest/x")
        #expect(try Request(method: .GET, target: "//rest//x?a=%2F%2F").query["a"] == "//")
    }

    @Test("an error under a dialect's prefix is rendered in that dialect with doubled slashes too")
    func dialect() async throws {
        let router = Router()
        router.setErrorResponder(forPrefix: "/rest/") { error, _ in .text("rest \(error.status)", status: error.status)
        }
        router.add(.GET, "/rest/known") { _ in .text("known") }
        let plain = await router.respond(to: try Request(method: .GET, target: "/rest/unknown"))
        let doubled = await router.respond(to: try Request(method: .GET, target: "//rest//unknown"))
        #expect(plain.status == 404)
        #expect(doubled.status == 404)
        #expect(doubled.body == plain.body)
        #expect(String(decoding: doubled.body, as: UTF8.self) == "rest 404")
    }
}
