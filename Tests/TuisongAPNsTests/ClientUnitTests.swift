import Foundation
import Synchronization
import Testing

@testable import TuisongAPNs

@Suite struct ClientEndpointTests {
    @Test func parsesAppleURLs() {
        #expect(APNsEndpoint(url: "https://api.push.apple.com:443") == .production)
        #expect(APNsEndpoint(url: "https://api.sandbox.push.apple.com") == .sandbox)
        #expect(
            APNsEndpoint(url: "https://api.push.apple.com:2197/")
                == APNsEndpoint(host: "api.push.apple.com", port: 2197))
        #expect(
            APNsEndpoint(url: "HTTPS://localhost:8443")
                == APNsEndpoint(host: "localhost", port: 8443))
        #expect(APNsEndpoint(url: "https://[::1]:9443") == APNsEndpoint(host: "::1", port: 9443))
    }

    @Test func rejectsWhatIsNotAnHTTPSOrigin() {
        for text in [
            "http://api.push.apple.com", "api.push.apple.com:443", "https://", "https://:443",
            "https://host:0", "https://host:70000", "https://host:x", "https://host/3/device",
            "https://user@host", "https://[::1", "https://[::1]x",
        ] {
            #expect(APNsEndpoint(url: text) == nil, "\(text)")
        }
    }

    @Test func authorityOmitsTheDefaultPort() {
        #expect(APNsEndpoint.production.authority == "api.push.apple.com")
        #expect(APNsEndpoint(host: "localhost", port: 2197).authority == "localhost:2197")
        #expect(APNsEndpoint(host: "::1", port: 9443).authority == "[::1]:9443")
        #expect(APNsEndpoint(host: "::1", port: 9443).description == "https://[::1]:9443")
    }
}

@Suite struct ClientResponseParsingTests {
    @Test func readsReasonAndMillisecondTimestamp() {
        let body = Array(#"{"reason":"Unregistered","timestamp":1700000000123}"#.utf8)
        let response = APNsResponse(status: 410, apnsID: "abc", body: body)
        #expect(response.reason == "Unregistered")
        #expect(response.apnsID == "abc")
        #expect(response.timestamp == Date(timeIntervalSince1970: 1_700_000_000.123))
    }

    @Test func toleratesBodiesThatAreNotTheErrorJSON() {
        #expect(APNsResponse(status: 400, apnsID: nil, body: Array("<html>".utf8)).reason == nil)
        #expect(
            APNsResponse(status: 400, apnsID: nil, body: Array(#"{"reason":5}"#.utf8)).reason == nil
        )
        #expect(APNsResponse(status: 500, apnsID: nil, body: []).reason == nil)
        // A 200 body is not an error report.
        #expect(
            APNsResponse(status: 200, apnsID: nil, body: Array(#"{"reason":"x"}"#.utf8)).reason
                == nil)
    }

    @Test func onlyAnswersPastTheTokenCheckLiftTheOneStreamLimit() {
        for status in [200, 400, 404, 405, 410, 413, 429] {
            #expect(ProviderTokenAuthorizer.provesTokenAccepted(status: status), "\(status)")
        }
        for status in [0, 403, 500, 503] {
            #expect(!ProviderTokenAuthorizer.provesTokenAccepted(status: status), "\(status)")
        }
    }

    @Test func errorDescriptionNamesTheCode() {
        let error = APNsTransportError(.alpnNotNegotiated, "server selected none")
        #expect(error.description == "APNs alpnNotNegotiated: server selected none")
        #expect(error.code != .tlsFailed)
    }
}
