import Foundation
import TuisongHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// A response as a test sees it, the same whether it came from a router in process or from a
/// live server over a socket: status, headers, body bytes.
///
///     let response = try await client.execute("GET", "/api/v1/devices/\(token)")
///     #expect(response.status == 200)
///     #expect(response.headers["content-type"] == "application/json")
///     #expect(response.jsonObject["token"] as? String == token)
public struct TestResponse: Sendable {
    public var status: Int
    /// The reason phrase of the status line ("" in process, where there is none).
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(status: Int, reason: String = "", headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
    }

    /// What a router answered, as a server would send it.
    public init(_ response: Response) {
        self.init(status: response.status, headers: response.headers, body: response.body)
    }

    /// The first value of the header `name` (any case).
    public func header(_ name: String) -> String? { headers[name] }

    public var text: String { String(decoding: body, as: UTF8.self) }

    /// The body as a JSON object; throws when it is not one.
    public func json() throws -> [String: Any] {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            throw TestClientError(description: "not a JSON object: \(text)")
        }
        return object
    }

    /// The body as a JSON object, empty when it is not one.
    public var jsonObject: [String: Any] { (try? json()) ?? [:] }
}

public struct TestClientError: Error, CustomStringConvertible {
    public var description: String

    public init(description: String) {
        self.description = description
    }
}

/// One client for every level (HummingbirdTesting's `app.test(.router)`): the same requests
/// and the same `TestResponse` whether the test talks to a router in process (no socket) or to
/// a live server over loopback (a fresh connection per request, off the cooperative pool).
///
///     let client = TestClient(router: router)  // or TestClient(port: server.port)
///     let response = try await client.execute("POST", "/api/v1/push", json: ["audience": ["all": true]])
public struct TestClient: Sendable {
    public enum Target: Sendable {
        case router(Router)
        case server(host: String, port: Int)
    }

    public let target: Target

    public init(router: Router) { target = .router(router) }

    public init(port: Int, host: String = "127.0.0.1") { target = .server(host: host, port: port) }

    /// Sends to a whole `http://host:port/path?query` URL, over a socket.
    public static func execute(
        _ method: String, url: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> TestResponse {
        guard let components = URLComponents(string: url) else {
            throw TestClientError(description: "not a URL: \(url)")
        }
        let path = components.percentEncodedPath.isEmpty ? "/" : components.percentEncodedPath
        let target = path + (components.percentEncodedQuery.map { "?" + $0 } ?? "")
        return try await TestClient(baseURL: url).execute(method, target, headers: headers, body: body)
    }

    /// `http://host:port` (a path after it is ignored).
    public init(baseURL: String) {
        let url = URL(string: baseURL)!
        target = .server(host: url.host ?? "127.0.0.1", port: url.port ?? 80)
    }

    /// Sends `method target` (a path with an optional query) with `headers` and `body`. `Host`
    /// is added unless given (`localhost` in process, `host:port` over a socket, as a browser
    /// sends it); over a socket `Content-Length` is added for a body (or a POST or PUT) unless
    /// given.
    public func execute(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = []
    ) async throws -> TestResponse {
        switch self.target {
        case .router(let router):
            var fields = headers
            if !fields.contains(where: { $0.0.lowercased() == "host" }) { fields.append(("Host", "localhost")) }
            let request = try Request(
                method: HTTPMethod(rawValue: method), target: target, headers: HTTPHeaders(fields), body: body,
                remoteAddress: "127.0.0.1")
            return TestResponse(await router.respond(to: request))
        case .server(let host, let port):
            var fields = headers
            if !fields.contains(where: { $0.0.lowercased() == "host" }) {
                fields.insert(("Host", "\(host):\(port)"), at: 0)
            }
            return try await offPool { [fields] in
                try RawHTTPClient(port: port, host: host).request(method, target, headers: fields, body: body)
            }
        }
    }

    /// A JSON body (`Content-Type: application/json` unless `headers` has one).
    public func execute(
        _ method: String, _ target: String, json: Any, headers: [(String, String)] = []
    ) async throws -> TestResponse {
        var headers = headers
        if !headers.contains(where: { $0.0.lowercased() == "content-type" }) {
            headers.append(("Content-Type", "application/json"))
        }
        return try await execute(
            method, target, headers: headers, body: Array(try JSONSerialization.data(withJSONObject: json)))
    }
}

/// A deliberately small HTTP/1.1 client over a blocking loopback socket: it sends exactly the
/// bytes a test writes (malformed ones included) and parses what comes back.
public final class RawHTTPClient: @unchecked Sendable {  // used by one test thread at a time
    public let descriptor: Int32
    private var buffer: [UInt8] = []

    /// - Parameter source: the local address to connect from (any of 127.0.0.0/8 on loopback),
    ///   so one test can be several clients; nil lets the kernel choose.
    /// - Parameter receiveTimeout: how long one `recv` may wait. 30 s by default, not 10: at load
    ///   18–26 on 2 cores (the suite beside three builds) an ordinary answer took more than 10 s,
    ///   and a test that is not about timing must not fail for it (tests of timeouts pass their own).
    public init(port: Int, host: String = "127.0.0.1", receiveTimeout: Double = 30, source: String? = nil) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw TestClientError(description: "socket: \(errno)") }
        // Every property is set from here, so a throw runs `deinit`, which closes the socket:
        // closing it here too closed it twice, and the second close took whatever descriptor
        // another test had opened under that number meanwhile (a SQLite file, an MHD socket).
        if let source, let code = Self.attach(descriptor, to: source, port: 0, { bind($0, $1, $2) }) {
            throw TestClientError(description: "bind \(source): \(String(cString: strerror(code)))")
        }
        if let code = Self.attach(descriptor, to: host, port: port, { connect($0, $1, $2) }) {
            throw TestClientError(description: "connect: \(String(cString: strerror(code)))")
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

    /// Binds or connects (`call`) `descriptor` to an IPv4 `address` and `port`; errno on failure.
    private static func attach(
        _ descriptor: Int32, to address: String, port: Int,
        _ call: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Int32
    ) -> Int32? {
        var socketAddress = sockaddr_in()
        socketAddress.sin_family = sa_family_t(AF_INET)
        socketAddress.sin_port = UInt16(port).bigEndian
        inet_pton(AF_INET, address, &socketAddress.sin_addr)
        let result = withUnsafePointer(to: &socketAddress) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                call(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        return result == 0 ? nil : errno
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }

    public func send(_ text: String) throws {
        try send(Array(text.utf8))
    }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes {
                Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard sent > 0 else {
                throw TestClientError(description: "send: \(String(cString: strerror(errno)))")
            }
            offset += sent
        }
    }

    /// Half-closes the connection: the server reads end-of-stream after what was sent.
    public func finishSending() {
        shutdown(descriptor, Int32(SHUT_WR))
    }

    /// Reads more bytes into the buffer; false at end of stream.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count == 0 { return false }
        if count < 0 {
            if errno == ECONNRESET { return false }
            throw TestClientError(description: "recv: \(String(cString: strerror(errno)))")
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
            guard try fill() else { throw TestClientError(description: "connection closed mid-line") }
        }
    }

    private func readExactly(_ count: Int) throws -> [UInt8] {
        while buffer.count < count {
            guard try fill() else { throw TestClientError(description: "connection closed mid-body") }
        }
        let bytes = Array(buffer[..<count])
        buffer.removeSubrange(..<count)
        return bytes
    }

    /// Reads one response. `head` is true for a response to HEAD (no body follows).
    public func readResponse(head: Bool = false) throws -> TestResponse {
        let statusLine = try readLine()
        let parts = statusLine.split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw TestClientError(description: "bad status line: \(statusLine)")
        }
        var headers = HTTPHeaders()
        while true {
            let line = try readLine()
            if line.isEmpty { break }
            guard let colon = line.firstIndex(of: ":") else {
                throw TestClientError(description: "bad header: \(line)")
            }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = TestResponse(
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
                    throw TestClientError(description: "bad chunk size: \(sizeLine)")
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

    /// Sends a request built from parts and reads the response. `Host: localhost` comes first
    /// unless `headers` has a Host; `Content-Length` follows them for a body (or a POST or PUT)
    /// unless they have one.
    public func request(
        _ method: String, _ target: String, headers: [(String, String)] = [], body: [UInt8] = [],
        head: Bool = false
    ) throws -> TestResponse {
        let given = Set(headers.map { $0.0.lowercased() })
        var text = "\(method) \(target) HTTP/1.1\r\n"
        if !given.contains("host") { text += "Host: localhost\r\n" }
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if !given.contains("content-length"), !body.isEmpty || method == "POST" || method == "PUT" {
            text += "Content-Length: \(body.count)\r\n"
        }
        text += "\r\n"
        try send(Array(text.utf8) + body)
        return try readResponse(head: head || method == "HEAD")
    }

    /// True when the server closes the connection (EOF or reset) within the receive timeout
    /// without sending anything more.
    public func waitsForClose() throws -> Bool {
        do {
            while try fill() {}
            return true
        } catch {
            return false
        }
    }

    /// The next response, or nil when the server closes the connection without sending one.
    public func readResponseOrClose() throws -> TestResponse? {
        if buffer.isEmpty {
            guard try fill() else { return nil }
        }
        return try readResponse()
    }

    /// Whatever arrives until the server closes the connection.
    public func readUntilClose() throws -> [UInt8] {
        while try fill() {}
        defer { buffer = [] }
        return buffer
    }
}
