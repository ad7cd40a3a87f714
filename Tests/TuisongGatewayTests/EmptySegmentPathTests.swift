import Foundation
import Testing
import TuisongPluginTestKit

/// A path with empty segments (`//admin/api/apps`) is routed like its plain form, so it must be
/// answered like it too, in the same dialect: nothing is learnt from doubling a slash.
@Suite(.serialized) struct EmptySegmentPathTests {
    /// Sends `target` exactly as written (URLSession would tidy it) and reads the whole answer.
    func get(_ port: Int, _ target: String) async throws -> (status: Int, body: String) {
        let response = try await TestClient(port: port).execute(
            "GET", target, headers: [("Host", "a"), ("Connection", "close")])
        return (response.status, response.text)
    }

    /// The body without what changes per request (Baidu's request id).
    func shape(_ body: String) -> String {
        body.replacingOccurrences(of: #"\d{6,}"#, with: "N", options: .regularExpression)
    }

    @Test func doubledSlashesAreAnsweredAsThePlainPathInEveryDialect() async throws {
        let gateway = try await TestGateway.start()
        let port = gateway.runtime.port
        let pairs: [(plain: String, doubled: String)] = [
            ("/admin/api/apps", "//admin/api/apps"),
            ("/admin/api/nonexistent", "//admin/api/nonexistent"),
            ("/admin/api/nonexistent", "/admin//api/nonexistent"),
            ("/rest/2.0/channel/nonexistent", "//rest/2.0/channel/nonexistent"),
            ("/rest/3.0/push/single_device", "//rest//3.0/push/single_device"),
            ("/baidu/nonexistent", "//baidu/nonexistent"),
            ("/api/v1/nonexistent", "//api/v1/nonexistent"),
            (
                "/api/v1/devices/" + String(repeating: "ab", count: 32),
                "//api//v1/devices/" + String(repeating: "ab", count: 32)
            ),
        ]
        for (plain, doubled) in pairs {
            let expected = try await get(port, plain)
            let answer = try await get(port, doubled)
            #expect(answer.status == expected.status, "\(doubled) → \(answer.status), \(plain) → \(expected.status)")
            #expect(shape(answer.body) == shape(expected.body), "\(doubled): \(answer.body) vs \(expected.body)")
        }
        // Without a session, the console API names no route: an unknown one is 401 like a real one.
        #expect(try await get(port, "//admin/api/nonexistent").status == 401)
        #expect(try await get(port, "//admin/api/apps").status == 401)
        await gateway.stop()
    }
}
