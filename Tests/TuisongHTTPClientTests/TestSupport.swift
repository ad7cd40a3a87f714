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

/// A loopback HTTP/1.1 server that answers every request with `head` and then writes `filler`
/// over and over until the client goes away (or `limit` bytes, so a test that fails still ends):
/// an upstream whose answer never ends. Counts what it managed to write.
final class EndlessAnswerServer: Sendable {
    let port: Int
    private let listenerFD: Int32
    private let written = ByteCounter()
    private let limit: Int

    final class ByteCounter: Sendable {
        let count = Atomic<Int>(0)
    }

    /// Bytes written after the head, over every connection so far.
    var bytesWritten: Int { written.count.load(ordering: .relaxed) }

    init(head: String, filler: String, limit: Int = 1 << 30) throws {
        let listener = try SilentListener()
        // The listener object closes its descriptor when it goes: keep a duplicate.
        listenerFD = dup(listener.fd)
        port = listener.port
        self.limit = limit
        let fd = listenerFD
        let limit = limit
        let headBytes = Array(head.utf8)
        let fillerBytes = Array(String(repeating: filler, count: max(1, 16_384 / max(1, filler.utf8.count))).utf8)
        let thread = Thread { [written] in
            while true {
                let connection = accept(fd, nil, nil)
                guard connection >= 0 else { return }
                defer { close(connection) }
                var request: [UInt8] = []
                var buffer = [UInt8](repeating: 0, count: 4096)
                while !request.ends(with: Array("\r\n\r\n".utf8)) {
                    let count = recv(connection, &buffer, buffer.count, 0)
                    guard count > 0 else { break }
                    request += buffer[..<count]
                }
                guard send(connection, headBytes, headBytes.count, Int32(MSG_NOSIGNAL)) == headBytes.count else {
                    continue
                }
                var sent = 0
                while sent < limit {
                    let count = send(connection, fillerBytes, fillerBytes.count, Int32(MSG_NOSIGNAL))
                    guard count > 0 else { break }
                    sent += count
                    written.count.add(count, ordering: .relaxed)
                }
            }
        }
        thread.start()
    }

    /// Stops accepting (the accept thread ends on the closed descriptor).
    func stop() {
        shutdown(listenerFD, Int32(SHUT_RDWR))
        close(listenerFD)
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}
