import Foundation
import Testing
import TuisongCrypto
import TuisongPluginTestKit

@testable import TuisongAPNs

/// Failures before HTTP/2 starts, against real loopback servers: `openssl s_server` for TLS
/// without h2, untrusted or mismatched certificates; a silent listener; a closed port.
@Suite(.timeLimit(.minutes(1))) struct ClientFailureTests {
    /// A token credential: these failures happen before any request is authenticated.
    private func tokenCredential() throws -> APNsCredentialMaterial {
        .token(key: try PrivateKey.generateP256(), keyID: "ABC123DEFG", teamID: "DEF123GHIJ")
    }

    private func pool(
        port: Int, host: String = "127.0.0.1", caFile: String?,
        requestTimeout: Duration = .seconds(5),
        connectTimeout: Duration = .seconds(5)
    ) throws -> APNsConnectionPool {
        var configuration = APNsConnectionPool.Configuration(
            endpoint: APNsEndpoint(host: host, port: port))
        configuration.caFile = caFile
        configuration.requestTimeout = requestTimeout
        configuration.connectTimeout = connectTimeout
        configuration.connections = 1
        return try APNsConnectionPool(
            configuration: configuration, credential: try tokenCredential(),
            logger: clientTestLogger)
    }

    private func sendExpectingError(_ pool: APNsConnectionPool) async -> APNsTransportError? {
        do {
            let response = try await pool.send(clientTestRequest())
            Issue.record("expected a transport error, got \(response)")
            return nil
        } catch {
            return error
        }
    }

    @Test func serverWithoutALPNH2FailsClearlyAndFast() async throws {
        let directory = try ClientTemporaryDirectory()
        let pki = try ClientTestPKI()
        let leaf = try pki.issue()
        let server = try await OpenSSLTestServer.start(
            certificate: leaf.certificate, key: leaf.key, alpn: nil, directory: directory)
        defer { server.stop() }
        let caFile = try directory.write("ca.pem", pki.caCertificate.pem())

        let pool = try pool(port: server.port, caFile: caFile, requestTimeout: .seconds(20))
        let error = await sendExpectingError(pool)
        #expect(error?.code == .alpnNotNegotiated)
        #expect(error?.message.contains("ALPN") == true)
        // A misconfiguration fails the waiting request at once, not by its timeout running out
        // (which the pool counts), however long a loaded machine took.
        #expect(pool.statistics.timeouts == 0)
        #expect(error?.message.contains("request timeout") == false)
        await pool.shutdown()

        let tested = await APNsConnectionTester.test(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: server.port),
            credential: try tokenCredential(), caFile: caFile, timeout: .seconds(5))
        #expect(!tested.ok)
        #expect(tested.detail.contains("alpnNotNegotiated"))
    }

    @Test func untrustedServerCertificateIsATLSError() async throws {
        let directory = try ClientTemporaryDirectory()
        let serverPKI = try ClientTestPKI(commonName: "Some other CA")
        let leaf = try serverPKI.issue()
        let server = try await OpenSSLTestServer.start(
            certificate: leaf.certificate, key: leaf.key, alpn: "h2", directory: directory)
        defer { server.stop() }
        // The client trusts a different CA (plus the system store, which has neither).
        let trustedCA = try ClientTestPKI()
        let caFile = try directory.write("ca.pem", trustedCA.caCertificate.pem())

        let pool = try pool(port: server.port, caFile: caFile, requestTimeout: .seconds(20))
        let error = await sendExpectingError(pool)
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("unable to get local issuer certificate") == true)
        await pool.shutdown()
    }

    @Test func hostNameMismatchIsATLSError() async throws {
        let directory = try ClientTemporaryDirectory()
        let pki = try ClientTestPKI()
        let leaf = try pki.issue(commonName: "api.push.apple.com", names: ["api.push.apple.com"])
        let server = try await OpenSSLTestServer.start(
            certificate: leaf.certificate, key: leaf.key, alpn: "h2", directory: directory)
        defer { server.stop() }
        let caFile = try directory.write("ca.pem", pki.caCertificate.pem())

        let pool = try pool(port: server.port, host: "localhost", caFile: caFile)
        let error = await sendExpectingError(pool)
        #expect(error?.code == .tlsFailed)
        #expect(error?.message.contains("hostname mismatch") == true)
        await pool.shutdown()
    }

    @Test func trustedTLSWithoutHTTP2SettingsHitsTheConnectTimeout() async throws {
        // s_server negotiates h2 but never sends SETTINGS: setup must still end in time.
        let directory = try ClientTemporaryDirectory()
        let pki = try ClientTestPKI()
        let leaf = try pki.issue()
        let server = try await OpenSSLTestServer.start(
            certificate: leaf.certificate, key: leaf.key, alpn: "h2", directory: directory)
        defer { server.stop() }
        let caFile = try directory.write("ca.pem", pki.caCertificate.pem())

        let tested = await APNsConnectionTester.test(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: server.port),
            credential: try tokenCredential(), caFile: caFile, timeout: .milliseconds(700))
        #expect(!tested.ok)
        #expect(tested.detail.contains("timed out"))
        #expect(tested.detail.contains("awaitingSettings"))
    }

    @Test func silentServerHitsTheConnectTimeout() async throws {
        let listener = try SilentListener()
        let pool = try pool(
            port: listener.port, caFile: nil, requestTimeout: .seconds(2),
            connectTimeout: .milliseconds(300))
        let error = await sendExpectingError(pool)
        #expect(error?.code == .connectFailed)
        #expect(error?.message.contains("unreachable for longer than the request timeout") == true)
        #expect(error?.message.contains("timed out") == true)
        #expect(pool.statistics.connectFailures >= 1)
        await pool.shutdown()
    }

    @Test func closedPortFailsAfterTheRequestTimeoutWithTheConnectError() async throws {
        let port = try closedLoopbackPort()
        let pool = try pool(port: port, caFile: nil, requestTimeout: .milliseconds(800))
        let started = ContinuousClock.now
        let error = await sendExpectingError(pool)
        #expect(error?.code == .connectFailed)
        #expect(error?.message.contains("Connection refused") == true)
        #expect(ContinuousClock.now - started >= .milliseconds(700))
        // Reconnects back off instead of hammering: a handful of attempts in 800 ms. A loaded
        // machine only makes fewer, never more; the second comes after the first backoff (~200 ms),
        // leaving ~600 ms for its refusal to be seen before the timeout.
        let attempts = pool.statistics.connectFailures
        #expect(attempts >= 2 && attempts < 12, "\(attempts) connect attempts")
        await pool.shutdown()

        let tested = await APNsConnectionTester.test(
            endpoint: APNsEndpoint(host: "127.0.0.1", port: port),
            credential: try tokenCredential(),
            timeout: .seconds(2))
        #expect(!tested.ok)
        #expect(tested.detail.contains("Connection refused"))
    }

    @Test func sendAfterShutdownFailsWithShutdown() async throws {
        let pool = try pool(port: try closedLoopbackPort(), caFile: nil)
        await pool.shutdown()
        await pool.shutdown()  // idempotent
        let error = await sendExpectingError(pool)
        #expect(error?.code == .shutdown)
    }

    @Test func shutdownFailsWaitingRequests() async throws {
        let listener = try SilentListener()
        let pool = try pool(port: listener.port, caFile: nil, requestTimeout: .seconds(30))
        async let outcome = sendExpectingError(pool)
        try await waitUntil("the request is queued") { pool.statistics.queued == 1 }
        await pool.shutdown()
        let error = await outcome
        #expect(error?.code == .shutdown)
    }

    @Test func cancellingTheTaskFailsTheRequestWithCancelled() async throws {
        let listener = try SilentListener()
        let pool = try pool(port: listener.port, caFile: nil, requestTimeout: .seconds(30))
        let task = Task { await sendExpectingError(pool) }
        try await waitUntil("the request is queued") { pool.statistics.queued == 1 }
        task.cancel()
        let error = await task.value
        #expect(error?.code == .cancelled)
        await pool.shutdown()
    }
}
