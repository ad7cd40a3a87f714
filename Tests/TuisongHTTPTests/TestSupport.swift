import Foundation
import Testing
// Re-exported for every file of this target: the kit's `eventually` and `offPool` (and the
// raw client) are used throughout without each file importing the kit.
@_exported import TuisongPluginTestKit

@testable import TuisongHTTP

#if canImport(Glibc)
    import Glibc
#endif

struct ClientError: Error, CustomStringConvertible {
    let description: String
}

/// A response as read off the wire.
struct RawResponse: Sendable {
    var status: Int
    var reason: String
    var headers: [(name: String, value: String)]
    var body: [UInt8]

    func header(_ name: String) -> String? {
        headers.first { $0.name.lowercased() == name.lowercased() }?.value
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    func json() throws -> [String: Any] {
        guard let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else {
            throw ClientError(description: "not a JSON object: \(text)")
        }
        return object
    }
}

/// A deliberately small HTTP/1.1 client over a blocking loopback socket: it sends exactly the
/// bytes a test writes (malformed ones included) and parses what comes back.
final class RawHTTPClient: @unchecked Sendable {  // used by one test thread at a time
    let descriptor: Int32
    private var buffer: [UInt8] = []

    /// - Parameter source: the local address to connect from (any of 127.0.0.0/8 on loopback),
    ///   so one test can be several clients; nil lets the kernel choose.
    init(port: Int, host: String = "127.0.0.1", receiveTimeout: Double = 10, source: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ClientError(description: "socket: \(errno)") }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            inet_pton(AF_INET, source, &local.sin_addr)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
            guard bound == 0 else {
                let code = errno
                Glibc.close(descriptor)
                throw ClientError(description: "bind \(source): \(String(cString: strerror(code)))")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            Glibc.close(descriptor)
            throw ClientError(description: "connect: \(String(cString: strerror(code)))")
        }
        var timeout = timeval(
            tv_sec: Int(receiveTimeout),
            tv_usec: Int((receiveTimeout - receiveTimeout.rounded(.down)) * 1e6))
        setsockopt(
            descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var one: Int32 = 1
        setsockopt(
            descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
    }

    deinit {
        Glibc.close(descriptor)
    }

    func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else {
                throw ClientError(description: "send: \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
    }

    /// Half-closes the connection: the server reads end-of-stream after what was sent.
    func finishSending() {
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Reads more bytes into the buffer; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw ClientError(description: "recv: \(String(cString: strerror(errno)))")
        }
        buffer.append(contentsOf: chunk[0..<count])
        return true
    }

    private func readLine() throws -> String {
        while true {
            if let index = buffer.firstIndex(of: 10) {
                var line = Array(buffer[..<index])
                buffer.removeSubrange(...index)
                if line.last == 13 { line.removeLast() }
                return String(decoding: line, as: UTF8.self)
            }
            guard try fill() else { throw ClientError(description: "connection closed mid-line") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw ClientError(description: "connection closed mid-body") }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return bytes
    }

    /// Reads one response. `head` is true for a response to HEAD (no body follows).
    func readResponse(head: Bool = false) throws -> RawResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw ClientError(description: "bad status line: \(statusLine)")
        }
        var headers: [(name: String, value: String)] = []
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else {
                throw ClientError(description: "bad header: \(line)")
            }
            headers.append(
                (
                    String(line[..<colon]),
                    line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
                ))
        }
        var response = RawResponse(
            status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: headers,
            body: [])
        if head || status == 204 || status == 304 || (100..<200).contains(status) {
            return response
        }
        if let length = response.header("Content-Length").flatMap({ Int($0) }) {
            response.body = try readExactly(length)
        } else if response.header("Transfer-Encoding")?.lowercased() == "chunked" {
            while true {
                let sizeLine = try readLine()
                guard let size = Int(sizeLine.split(separator: ";")[0], radix: 16) else {
                    throw ClientError(description: "bad chunk size: \(sizeLine)")
                }
                if size == 0 {
                    while try !readLine().isEmpty {}
                    break
                }
                response.body += try readExactly(size)
                _ = try readLine()
            }
        } else {
            while try fill() {}
            response.body = buffer
            buffer = []
        }
        return response
    }

    /// Sends a request built from parts and reads the response.
    func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        head: Bool = false
    ) throws -> RawResponse {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: localhost\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "\r\n"
        try send(Array(text.utf8) + body)
        return try readResponse(head: head || method == "HEAD")
    }

    /// True when the server closes the connection (EOF or reset) within the receive timeout
    /// without sending anything more.
    func waitsForClose() throws -> Bool {
        do {
            while try fill() {}
            return true
        } catch {
            return false
        }
    }

    /// The next response, or nil when the server closes the connection without sending one.
    func readResponseOrClose() throws -> RawResponse? {
        if buffer.isEmpty {
            guard try fill() else { return nil }
        }
        return try readResponse()
    }

    /// Whatever arrives until the server closes the connection.
    func readUntilClose() throws -> [UInt8] {
        while try fill() {}
        defer { buffer = [] }
        return buffer
    }
}

/// One request on a fresh connection, off the cooperative pool.
func fetch(
    port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
    body: [UInt8] = []
) async throws -> RawResponse {
    try await offPool {
        let client = try RawHTTPClient(port: port)
        return try client.request(method, target, headers: headers, body: body)
    }
}

/// Starts a server on an ephemeral loopback port, runs `body`, and shuts it down.
func withServer<T>(
    _ configure: (inout HTTPServer.Configuration) -> Void = { _ in },
    router: Router,
    _ body: (HTTPServer) async throws -> T
) async throws -> T {
    var configuration = HTTPServer.Configuration(host: "127.0.0.1", port: 0)
    configure(&configuration)
    let server = HTTPServer(configuration: configuration, router: router)
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

/// Runs `curl` with `arguments` and returns its standard output (status checked by callers).
func curl(_ arguments: [String]) async throws -> (status: Int32, output: String) {
    try await offPool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["--silent", "--show-error", "--max-time", "20"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
