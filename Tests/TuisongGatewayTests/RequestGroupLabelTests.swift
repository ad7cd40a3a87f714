import Testing
import TuisongHTTP

@testable import TuisongGateway

/// The `group` label of the HTTP metrics and access lines: the gateway's own APIs by prefix, a
/// vendor's by the provider whose route group claims the path, never by a path the core knows.
@Suite struct RequestGroupLabelTests {
    @Test func aVendorPathIsLabelledByTheGroupThatClaimsIt() throws {
        let router = Router()
        router.addGroup(
            name: "acme", claims: { $0.hasPrefix("/acme/") }, errorResponder: Router.nativeJSONErrors
        ) { group in
            group.add(.POST, "/acme/push") { _ in Response(status: 200) }
        }
        // A prefix's error dialect alone is not a provider's API.
        router.setErrorResponder(forPrefix: "/legacy/", Router.nativeJSONErrors)
        func label(_ method: HTTPMethod, _ target: String) throws -> String {
            HTTPObservation.group(of: try Request(method: method, target: target), router: router)
        }
        #expect(try label(.POST, "/acme/push") == "acme")
        #expect(try label(.GET, "/acme/no-such-route") == "acme")
        #expect(try label(.POST, "/api/v1/push") == "native")
        #expect(try label(.GET, "/admin/api/apps") == "admin")
        #expect(try label(.GET, "/healthz") == "health")
        #expect(try label(.GET, "/metrics") == "metrics")
        #expect(try label(.POST, "/rest/3.0/push/all") == "other")
        #expect(try label(.POST, "/legacy/call") == "other")
        #expect(try label(.GET, "/index.html") == "console")
    }
}
