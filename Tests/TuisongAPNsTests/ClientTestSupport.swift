import Foundation
import Logging
import Synchronization
import Testing
import TuisongCore
import TuisongCrypto
import TuisongPluginTestKit

@testable import TuisongAPNs
@testable import TuisongHTTP2Client

#if canImport(Glibc)
    import Glibc
#endif

/// A temporary directory removed when the value goes away.
final class ClientTemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent(
            "tuisong-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    @discardableResult
    func write(_ name: String, _ text: String) throws -> String {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
        return path(name)
    }
}

/// A throwaway CA and certificates issued by it, written as PEM files.
struct ClientTestPKI {
    let caCertificate: Certificate
    let caKey: PrivateKey

    init(commonName: String = "Tuisong client test CA") throws {
        let notBefore = Date().addingTimeInterval(-3600)
        caKey = try PrivateKey.generateP256()
        caCertificate = try Certificate.issue(
            subjectCommonName: commonName, subjectAltNames: [], publicKey: caKey.publicKey,
            issuer: nil, signingKey: caKey, isCA: true, notBefore: notBefore,
            notAfter: notBefore.addingTimeInterval(86400))
    }

    /// A leaf (server or client) certificate for `names` and its key.
    func issue(commonName: String = "localhost", names: [String] = ["localhost", "127.0.0.1"])
        throws -> (certificate: Certificate, key: PrivateKey)
    {
        let notBefore = Date().addingTimeInterval(-3600)
        let key = try PrivateKey.generateP256()
        let certificate = try Certificate.issue(
            subjectCommonName: commonName, subjectAltNames: names, publicKey: key.publicKey,
            issuer: (caCertificate, caKey), signingKey: key, isCA: false, notBefore: notBefore,
            notAfter: notBefore.addingTimeInterval(86400))
        return (certificate, key)
    }
}

/// `openssl s_server` on a free loopback port: a TLS server that speaks no HTTP/2, for the
/// failures before HTTP/2 starts (ALPN, trust, host name). Bounded by `timeout` and killed
/// by `stop()`.
final class OpenSSLTestServer {
    let port: Int
    private let process: ChildProcess
    /// s_server ends a session (and then exits) when its stdin reaches EOF, so stdin is a pipe
    /// kept open for the server's lifetime.
    private let input: Pipe

    private init(process: ChildProcess, input: Pipe, port: Int) {
        self.process = process
        self.input = input
        self.port = port
    }

    static func start(
        certificate: Certificate, key: PrivateKey, alpn: String?,
        directory: ClientTemporaryDirectory
    ) async throws -> OpenSSLTestServer {
        let certificatePath = try directory.write(
            "server-\(UUID().uuidString).pem", certificate.pem())
        let keyPath = try directory.write("server-key-\(UUID().uuidString).pem", try key.pkcs8PEM())
        let outputPath = directory.path("s_server-\(UUID().uuidString).out")
        _ = FileManager.default.createFile(atPath: outputPath, contents: nil)
        var arguments = [
            "60", "openssl", "s_server", "-accept", "0", "-4", "-cert", certificatePath, "-key",
            keyPath,
        ]
        if let alpn { arguments += ["-alpn", alpn] }
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = arguments
        let input = Pipe()
        process.standardInput = input
        let output = FileHandle(forWritingAtPath: outputPath)!
        process.standardOutput = output
        process.standardError = output
        // Started with no signal blocked (`ChildProcess`), so `terminate()` and `timeout` stop it.
        try process.run()
        // s_server prints "ACCEPT 0.0.0.0:<port>" once it listens.
        let found = await firstValue { () -> Int? in
            let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
            let line = text.split(separator: "\n").first { $0.hasPrefix("ACCEPT") }
            return line?.split(separator: ":").last.flatMap { Int($0) }
        }
        guard let found else {
            process.terminate()
            throw APNsTransportError(.connectFailed, "openssl s_server did not start")
        }
        return OpenSSLTestServer(process: process, input: input, port: found)
    }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    deinit { stop() }
}

/// A loopback TCP listener that never accepts: connects complete in the kernel's backlog,
/// then nothing is ever said (a black-holed TLS handshake).
final class SilentListener {
    let fd: Int32
    let port: Int

    init() throws {
        let socketFD = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socketFD, $0, length) }
        }
        guard bound == 0, listen(socketFD, 16) == 0 else {
            close(socketFD)
            throw APNsTransportError(.connectFailed, "cannot listen")
        }
        withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = getsockname(socketFD, $0, &length)
            }
        }
        fd = socketFD
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(fd) }
}

/// A loopback port with nothing listening (bound, then closed).
func closedLoopbackPort() throws -> Int {
    let listener = try SilentListener()
    return listener.port
}

/// A clock whose first reading is `skew` off and every later one is the wall clock: a host
/// clock corrected (by NTP) after the first provider token was signed.
final class ClientCorrectedClock: TuisongCore.Clock {
    private let firstReadingPending = Mutex(true)
    private let skew: TimeInterval

    init(skew: TimeInterval) { self.skew = skew }

    var now: Date {
        let skewed = firstReadingPending.withLock { pending -> Bool in
            defer { pending = false }
            return pending
        }
        return Date().addingTimeInterval(skewed ? skew : 0)
    }

    func sleep(until deadline: Date) async throws {
        try await SystemClock().sleep(until: deadline)
    }
}

let clientTestLogger: Logger = {
    var logger = Logger(label: "tuisong.apns.test")
    logger.logLevel =
        ProcessInfo.processInfo.environment["APNS_TEST_LOG"] != nil ? .debug : .critical
    return logger
}()

/// A well-formed alert request to `deviceToken` (64 hex characters by default).
func clientTestRequest(
    deviceToken: String = String(repeating: "ab", count: 32), topic: String = "com.example.app",
    payload: String = #"{"aps":{"alert":"hello"}}"#
) -> APNsRequest {
    APNsRequest(
        deviceToken: deviceToken, pushType: "alert", topic: topic,
        payload: Array(payload.utf8))
}
