import Foundation
import Testing
// Re-exported for every file of this target: the kit's `eventually` and `offPool` (and the
// raw client) are used throughout without each file importing the kit.
@_exported import TuisongPluginTestKit

@testable import TuisongHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// The kit's names under the ones these tests were written with.
typealias RawResponse = TestResponse
typealias ClientError = TestClientError

/// One request on a fresh connection, off the cooperative pool.
func fetch(
    port: Int, _ method: String, _ target: String, headers: [(String, String)] = [],
    body: [UInt8] = []
) async throws -> RawResponse {
    try await TestClient(port: port).execute(method, target, headers: headers, body: body)
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
        let process = ChildProcess()
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

extension TestResponse {
    /// Parses `bytes`, everything a connection delivered until the server closed it, as exactly
    /// one well-formed response: one status line and header block, a body of exactly its
    /// `Content-Length`, nothing after. Throws saying what else was found.
    static func only(in bytes: [UInt8]) throws -> TestResponse {
        let blocks = statusLineCount(in: bytes)
        guard blocks == 1 else {
            throw ClientError(
                description: "\(blocks) status lines, not one: \(String(decoding: bytes, as: UTF8.self))")
        }
        let separator = Array("\r\n\r\n".utf8)
        guard let end = bytes.indices.first(where: { bytes[$0...].starts(with: separator) }) else {
            throw ClientError(description: "no end of headers: \(String(decoding: bytes, as: UTF8.self))")
        }
        let lines = String(decoding: bytes[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let parts = lines[0].split(separator: " ", maxSplits: 2)
        guard parts.count >= 2, parts[0].hasPrefix("HTTP/1."), let status = Int(parts[1]) else {
            throw ClientError(description: "bad status line: \(lines[0])")
        }
        var headers = HTTPHeaders()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else {
                throw ClientError(description: "bad header: \(line)")
            }
            headers.add(
                name: String(line[..<colon]),
                value: line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        var response = TestResponse(
            status: status, reason: parts.count > 2 ? String(parts[2]) : "", headers: headers, body: [])
        let body = Array(bytes[(end + separator.count)...])
        guard let length = response.header("Content-Length").flatMap({ Int($0) }), length == body.count else {
            throw ClientError(
                description:
                    "Content-Length \(response.header("Content-Length") ?? "none") but \(body.count) body bytes")
        }
        response.body = body
        return response
    }

    /// How many status lines (`HTTP/1.x` at the start of a line) `bytes` holds: one per header
    /// block sent.
    static func statusLineCount(in bytes: [UInt8]) -> Int {
        let marker = Array("HTTP/1.".utf8)
        return bytes.indices.filter { index in
            (index == 0 || bytes[index - 1] == 10) && bytes[index...].starts(with: marker)
        }.count
    }
}

/// Sends `bytes` on a fresh connection and returns everything the server sends until it closes
/// the connection; throws if it is still open after `timeout` seconds. A send cut short by the
/// server closing is not an error: what it answered is still read.
func sendUntilClose(port: Int, _ bytes: [UInt8], timeout: Double = 5) async throws -> [UInt8] {
    try await offPool {
        let client = try RawHTTPClient(port: port, receiveTimeout: timeout)
        try? client.send(bytes)
        return try client.readUntilClose()
    }
}
