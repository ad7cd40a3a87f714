import Foundation
import Synchronization
import TuisongHTTP
import TuisongHTTPClient
import TuisongPluginTestKit

#if canImport(Glibc)
    import Glibc
#endif

/// Starts a plain HTTP/1.1 server on an ephemeral loopback port, runs `body`, and shuts it down.
func withHTTPServer<T>(router: Router, _ body: (HTTPServer) async throws -> T) async throws -> T {
    let server = HTTPServer(configuration: HTTPServer.Configuration(host: "127.0.0.1", port: 0), router: router)
    try server.start()
    do {
        let result = try await body(server)
        await server.shutdown()
        return result
    } catch {
        await server.shutdown()
        throw error
    }
}

/// A loopback socket that listens but never accepts: the kernel completes TCP handshakes, and
/// requests sent on them are never answered.
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0, listen(fd, 64) == 0 else {
            close(fd)
            throw TestTimeout(message: "cannot listen on loopback")
        }
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        self.fd = fd
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// A loopback port nothing listens on (bound, then closed).
func closedPort() throws -> Int {
    let listener = try SilentListener()
    return listener.port
}

/// Collects completion-handler results from the client's event thread.
final class ResultBox: Sendable {
    private let results = Mutex<[Result<HTTPClientResponse, HTTPClientError>]>([])

    func append(_ result: Result<HTTPClientResponse, HTTPClientError>) {
        results.withLock { $0.append(result) }
    }

    var all: [Result<HTTPClientResponse, HTTPClientError>] { results.withLock { $0 } }
    var count: Int { results.withLock { $0.count } }
}

extension Result where Failure == HTTPClientError {
    var failureCode: String? {
        if case .failure(let error) = self { return error.code }
        return nil
    }
}
