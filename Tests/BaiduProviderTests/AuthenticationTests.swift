import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import BaiduProvider

/// Authentication, rate limiting and error dialect over loopback.
@Suite(.serialized) struct AuthenticationTests {
    @Test(arguments: SignatureStyle.allCases)
    func everySDKEncodingIsAcceptedEndToEnd(style: SignatureStyle) async throws {
        try await withFixture { f in
            // Values with ~, *, spaces and UTF-8, where the encodings differ.
            let response = try await f.rest(
                "/rest/3.0/push/all", ["msg_type": "1", "msg": #"{"aps":{"alert":"~50% off* 今天 (only)!"}}"#],
                encoding: style)
            expectSuccess(response)
        }
    }

    @Test func timestampWindow() async throws {
        try await withFixture { f in
            let query = "/rest/3.0/app/query_tags"
            expectSuccess(try await f.rest(query, ["timestamp": String(f.now - 599)]))
            expectError(
                try await f.rest(query, ["timestamp": String(f.now - 601)]), 30606, status: 401, mentioning: "timestamp"
            )
            expectError(try await f.rest(query, ["timestamp": String(f.now + 601)]), 30606, mentioning: "future")
            // `expires` sets the end instead.
            expectSuccess(try await f.rest(query, ["timestamp": String(f.now - 3000), "expires": String(f.now + 10)]))
            expectError(
                try await f.rest(query, ["timestamp": String(f.now - 20), "expires": String(f.now - 1)]), 30606,
                mentioning: "expires")
            expectError(try await f.rest(query, ["timestamp": "yesterday"]), 30602, mentioning: "timestamp")
        }
    }

    @Test func keysAndSignatures() async throws {
        try await withFixture { f in
            let query = "/rest/3.0/app/query_tags"
            // Missing apikey: the SDK would never send that; named in the error.
            let url = f.baseURL + query
            var unsigned = ["timestamp": String(f.now)]
            unsigned["sign"] = try signWithPython(
                method: "POST", url: url, parameters: unsigned, secret: "x", style: .python)
            expectError(try await f.send(method: "POST", url: url, parameters: unsigned), 30602, mentioning: "apikey")
            expectError(try await f.rest(query, ["apikey": "SomeoneElse"]), 30603, status: 401, mentioning: "apikey")
            expectError(try await f.rest(query, [:], secret: "wrong-secret"), 30603, mentioning: "sign")
            expectError(try await f.rest(query, [:], sign: "0123456789abcdef0123456789abcdef"), 30603)
            expectError(try await f.rest(query, [:], sign: ""), 30602, mentioning: "sign")
            // Signed for another path.
            let other = try signWithPython(
                method: "POST", url: f.baseURL + "/rest/3.0/push/all",
                parameters: ["apikey": BaiduFixture.apiKey, "timestamp": String(f.now)], secret: BaiduFixture.secretKey,
                style: .python)
            expectError(try await f.rest(query, [:], sign: other), 30603)
        }
    }

    @Test func signatureFollowsTheHostTheClientAddressed() async throws {
        try await withFixture { f in
            // Behind a proxy: the client signed https://push.example.com/…
            let path = "/rest/3.0/app/query_tags"
            var parameters = ["apikey": BaiduFixture.apiKey, "timestamp": String(f.now)]
            parameters["sign"] = try signWithPython(
                method: "POST", url: "https://push.example.com" + path, parameters: parameters,
                secret: BaiduFixture.secretKey, style: .python)
            let body = Data(formEncode(parameters).utf8)
            let proxied = try await f.http(
                method: "POST", url: f.baseURL + path, body: body, contentType: "application/x-www-form-urlencoded",
                headers: ["X-Forwarded-Host": "push.example.com"])
            expectSuccess(proxied)
            let direct = try await f.http(
                method: "POST", url: f.baseURL + path, body: body, contentType: "application/x-www-form-urlencoded")
            expectError(direct, 30603)
        }
    }

    @Test func rateLimitPerAPIKey() async throws {
        try await withFixture(configuration: ["requests_per_second": 0.001, "burst": 2]) { f in
            let query = "/rest/3.0/app/query_tags"
            // Badly signed calls do not use up the app's quota.
            expectError(try await f.rest(query, [:], secret: "wrong"), 30603)
            expectSuccess(try await f.rest(query, [:]))
            expectSuccess(try await f.rest(query, [:]))
            expectError(try await f.rest(query, [:]), 30699, status: 429)
            f.clock.advance(by: 1000)
            expectSuccess(try await f.rest(query, [:]))
        }
    }

    @Test func unreadableSecretIsAnInternalError() async throws {
        try await withFixture { f in
            var app = try #require(try await f.store.app(id: f.app.id))
            // Sealed for another app: does not open here.
            app.vendorSettings["baidu"]?["secret_key_sealed"] = try TestSealer().seal(
                "s", context: "baidu:app:\(app.id)")
            try await f.store.updateApp(app)
            let response = try await f.rest("/rest/3.0/app/query_tags", [:])
            expectError(response, 30600, status: 500)
            #expect(!response.errorMessage.contains(BaiduFixture.secretKey))
        }
    }

    @Test func routerErrorsSpeakBaidu() async throws {
        try await withFixture { f in
            let notFound = try await f.http(method: "POST", url: f.baseURL + "/rest/9.0/x", body: nil, contentType: nil)
            expectError(notFound, 30601, status: 404)
            let wrongMethod = try await f.http(
                method: "PUT", url: f.baseURL + "/rest/3.0/push/all", body: Data("a=b".utf8),
                contentType: "application/x-www-form-urlencoded")
            expectError(wrongMethod, 30601, status: 405)
            let huge = try await f.http(
                method: "POST", url: f.baseURL + "/rest/3.0/push/all", body: Data(count: (1 << 20) + 1),
                contentType: "application/x-www-form-urlencoded")
            expectError(huge, 30602, status: 413)
            let json = try await f.http(
                method: "POST", url: f.baseURL + "/rest/3.0/push/all", body: Data(#"{"msg":"x"}"#.utf8),
                contentType: "application/json")
            expectError(json, 30602, mentioning: "x-www-form-urlencoded")
            let repeated = try await f.http(
                method: "POST", url: f.baseURL + "/rest/3.0/push/all", body: Data("apikey=a&apikey=b".utf8),
                contentType: "application/x-www-form-urlencoded")
            expectError(repeated, 30602, mentioning: "apikey")
        }
    }
}
