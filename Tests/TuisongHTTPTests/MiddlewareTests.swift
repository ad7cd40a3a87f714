import Foundation
import Synchronization
import Testing

@testable import TuisongHTTP

@Suite("Router middleware")
struct MiddlewareTests {
    @Test func middlewareWrapsRoutedHandlersAndOPTIONSButNotRouterErrors() async throws {
        let router = Router()
        router.add(.GET, "/items/{id}", handler: named("item"))
        let seen = Mutex<[String]>([])
        router.setMiddleware { request, next in
            seen.withLock { $0.append("\(request.method.rawValue) \(request.path)") }
            var response = await next(request)
            response.headers.add(name: "X-Wrapped", value: "yes")
            return response
        }

        let item = await router.respond(to: try Request(method: .GET, target: "/items/7"))
        #expect(try routeName(item) == "item")
        #expect(item.headers["X-Wrapped"] == "yes")
        // The route's parameters reach the wrapped handler.
        let params = try JSONSerialization.jsonObject(with: Data(item.body)) as? [String: Any]
        #expect((params?["params"] as? [String: String])?["id"] == "7")

        let options = await router.respond(to: try Request(method: .OPTIONS, target: "/items/7"))
        #expect(options.status == 204)
        #expect(options.headers["X-Wrapped"] == "yes")

        let missing = await router.respond(to: try Request(method: .GET, target: "/nowhere"))
        #expect(missing.status == 404)
        #expect(missing.headers["X-Wrapped"] == nil)
        let wrongMethod = await router.respond(to: try Request(method: .POST, target: "/items/7"))
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["X-Wrapped"] == nil)

        #expect(seen.withLock { $0 } == ["GET /items/7", "OPTIONS /items/7"])

        router.setMiddleware(nil)
        let plain = await router.respond(to: try Request(method: .GET, target: "/items/8"))
        #expect(plain.headers["X-Wrapped"] == nil)
    }
}
