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
