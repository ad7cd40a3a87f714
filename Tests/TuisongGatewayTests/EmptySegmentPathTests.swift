import Foundation
import Testing
import TuisongPluginTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// A path with empty segments (`//admin/api/apps`) is routed like its plain form, so it must be
/// answered like it too, in the same dialect: nothing is learnt from doubling a slash.
@Suite(.serialized) struct EmptySegmentPathTests {
    /// Sends `target` exactly as written (URLSession would tidy it) and reads the whole answer.
    func get(_ port: Int, _ target: String) throws -> (status: Int, body: String) {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else { throw TestTimeout(message: "connect failed") }
        var timeout = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        let request = Array("GET \(target) HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n".utf8)
        _ = request.withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        var answer: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count <= 0 { break }
            answer += buffer[..<count]
        }
        let text = String(decoding: answer, as: UTF8.self)
        let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? ""
        return (status, body)
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
            let expected = try get(port, plain)
            let answer = try get(port, doubled)
            #expect(answer.status == expected.status, "\(doubled) → \(answer.status), \(plain) → \(expected.status)")
            #expect(shape(answer.body) == shape(expected.body), "\(doubled): \(answer.body) vs \(expected.body)")
        }
        // Without a session, the console API names no route: an unknown one is 401 like a real one.
        #expect(try get(port, "//admin/api/nonexistent").status == 401)
        #expect(try get(port, "//admin/api/apps").status == 401)
        await gateway.stop()
    }
}
