import Foundation
import Logging
import Synchronization
import Testing
import TuisongCrypto
import TuisongLookAlikes

@testable import TuisongHTTP2Client

/// The engine's pool with a request type of its own (no service's), against the look-alikes'
/// server over real TLS + HTTP/2 on loopback: a path no look-alike claims is answered
/// `404 {"reason":"BadPath"}` with `apns-id` and `content-type` headers.
@Suite(.timeLimit(.minutes(1))) struct PoolTests {
    /// `POST <path>` with a header of the test's own and the authorization it is handed.
    struct PlainRequest: HTTP2RequestHead {
        var path: String
        var body: [UInt8] = Array(#"{"hello":"world"}"#.utf8)

        func writeHeaders(into block: inout HTTP2HeaderBlock, authority: [UInt8], authorization: String?) {
            block.append(":method", "POST")
            block.append(":scheme", "https")
            block.append(":authority", authority)
            block.append(":path", "", path)
            if let authorization { block.append("authorization", "Token ", authorization) }
            block.append("x-test", "yes")
            block.append("content-length", decimal: body.count)
        }
    }

    final class Fixture {
        let server: LookAlikeServer
        let tlsContext: TLSContext

        init() throws {
            let setup = try LookAlikeLocalSetup.generate(bundleID: "tuisong.http2.test")
            server = try LookAlikeServer(
                configuration: setup.configuration(), certificate: setup.serverCertificate, key: setup.serverKey)
            try server.start()
            tlsContext = try TLSContext.client(
                alpn: ["h2"], trustSystemCAs: false, caCertificates: [try Certificate(pem: setup.caCertificatePEM)])
        }

        deinit { server.shutdown() }

        func configuration(_ configure: (inout HTTP2ConnectionPool.Configuration) -> Void = { _ in })
            -> HTTP2ConnectionPool.Configuration
        {
            var configuration = HTTP2ConnectionPool.Configuration(
                label: "Test", endpoint: HTTP2Endpoint(host: "127.0.0.1", port: server.port))
            configuration.connections = 1
            configuration.requestTimeout = .seconds(20)
            configure(&configuration)
            return configuration
        }
    }

    @Test func keepsOnlyTheNamedHeadersAndCapsTheBody() async throws {
        let fixture = try Fixture()
        let pool = try HTTP2ConnectionPool(
            configuration: fixture.configuration { $0.responseHeaders = ["Content-Type"] },
            tlsContext: fixture.tlsContext, logger: Logger(label: "test"))
        let response = try await pool.send(PlainRequest(path: "/no/service/here"))
        #expect(response.status == 404)
        #expect(response.header("content-type") == "application/json")
        // Not asked for: dropped in nghttp2's header callback.
        #expect(response.header("apns-id") == nil)
        #expect(response.headers.count == 1)
        #expect(
            try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: String] == ["reason": "BadPath"])

        let capped = try HTTP2ConnectionPool(
            configuration: fixture.configuration { $0.maxResponseBodyBytes = 5 }, tlsContext: fixture.tlsContext,
            logger: Logger(label: "test"))
        let cut = try await capped.send(PlainRequest(path: "/no/service/here"))
        #expect(cut.status == 404)
        #expect(cut.body == Array(#"{"rea"#.utf8))
        #expect(cut.headers.isEmpty)
        await pool.shutdown()
        await capped.shutdown()
        #expect(pool.statistics.lastConnectError == nil)
    }

    /// An authorizer whose every value the server "refuses as expired" (the 404) and never
    /// proves accepted: each request is sent twice (renewed once), one stream at a time.
    final class ExpiringAuthorizer: HTTP2Authorizer {
        let issued = Mutex<[HTTP2Authorization]>([])
        let invalidated = Mutex<[HTTP2Authorization]>([])

        func currentAuthorization() throws(HTTP2ClientError) -> HTTP2Authorization {
            issued.withLock { issued in
                let authorization = HTTP2Authorization(
                    value: "t\(issued.count)", issuedAt: Date(timeIntervalSince1970: Double(issued.count)))
                issued.append(authorization)
                return authorization
            }
        }

        func answerProvesAuthorized(status: Int) -> Bool { false }

        func answerRefusesAsExpired(status: Int, body: [UInt8]) -> Bool { status == 404 }

        func invalidate(_ authorization: HTTP2Authorization) {
            invalidated.withLock { $0.append(authorization) }
        }
    }

    @Test func anAnswerRefusingThePoolsAuthorizationRenewsItAndResendsOnce() async throws {
        let fixture = try Fixture()
        let authorizer = ExpiringAuthorizer()
        let pool = try HTTP2ConnectionPool(
            configuration: fixture.configuration(), tlsContext: fixture.tlsContext, authorizer: authorizer,
            logger: Logger(label: "test"))
        let answers = Mutex<[HTTP2BatchAnswer]>([])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            pool.send((0..<3).map { PlainRequest(path: "/no/service/\($0)") }) { batch in
                let count = answers.withLock {
                    $0 += batch
                    return $0.count
                }
                if count == 3 { done.resume() }
            }
        }
        // Each request was answered (the second 404 is its answer), after one resend each.
        #expect(answers.withLock { $0.map { try? $0.result.get().status } } == [404, 404, 404])
        let statistics = pool.statistics
        #expect(statistics.responses == 6)
        #expect(statistics.retries == 3)
        // Never proved: one stream at a time on the one connection.
        #expect(statistics.peakStreamsPerConnection == 1)
        #expect(statistics.connectionsOpened == 1)
        // Each refusal invalidated the value that request carried.
        let invalidated = authorizer.invalidated.withLock { $0 }
        #expect(invalidated.count == 3)
        #expect(Set(invalidated).isSubset(of: Set(authorizer.issued.withLock { $0 })))
        await pool.shutdown()
    }

    @Test func aPoolThatIsShutDownFailsItsRequestsInItsOwnName() async throws {
        let fixture = try Fixture()
        let pool = try HTTP2ConnectionPool(
            configuration: fixture.configuration(), tlsContext: fixture.tlsContext, logger: Logger(label: "test"))
        await pool.shutdown()
        do {
            _ = try await pool.send(PlainRequest(path: "/late"))
            Issue.record("a shut-down pool answered")
        } catch {
            #expect(error.code == .shutdown)
            #expect(error.message == "the Test pool is shut down")
        }
    }
}
