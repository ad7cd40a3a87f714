import Testing
import TuisongCore
import TuisongHTTP
import TuisongPluginTestKit

@testable import TencentProvider

/// Tencent's envelope and body conventions, without a socket.
@Suite struct EnvelopeTests {
    func object(_ response: Response) throws -> [String: JSONValue] {
        try #require(try JSONValue(parsing: response.body).objectValue)
    }

    @Test func everyAnswerIsHTTP200WithTheEnvelope() throws {
        let ok = TencentReply.ok(["MsgTime": 5, "MsgKey": "k"])
        #expect(ok.status == 200)
        #expect(try object(ok) == ["ActionStatus": "OK", "ErrorCode": 0, "ErrorInfo": "", "MsgTime": 5, "MsgKey": "k"])

        let fail = TencentReply.fail(.accountNotFound("bob"), ["ErrorList": []])
        #expect(fail.status == 200)
        let fields = try object(fail)
        #expect(fields["ActionStatus"] == "FAIL" && fields["ErrorCode"] == 90012 && fields["ErrorList"] == [])
        #expect(fields["ErrorInfo"]?.stringValue?.contains("bob") == true)

        // What the HTTP layer refuses under /v4/ is an envelope with status 200 too.
        let request = try Request(method: .POST, target: "/v4/openim/nope")
        for (error, code) in [
            (HTTPError.notFound(), 60002), (.payloadTooLarge(limit: 65_536), 93000),
            (.methodNotAllowed(allow: [.POST], method: .PUT), 60002), (.badRequest("x"), 60002),
        ] {
            let response = TencentReply.errorResponder(error, request)
            #expect(response.status == 200)
            #expect(try object(response)["ErrorCode"]?.intValue == Int64(code))
        }
    }

    @Test("Mounted, the provider's route group claims /v4/: its name labels the requests, its dialect answers")
    func routesAreAGroup() async throws {
        let temporary = try TemporaryStore(providers: [TencentProvider.self])
        defer { temporary.remove() }
        let gateway = RecordingGateway(store: temporary.store, clock: ManualClock())
        let provider = try TencentProvider(context: temporary.context(gateway: gateway, secrets: try TestSealer()))
        let router = TestRouter()
        provider.register(on: router.router)
        #expect(router.router.groupName(claiming: "/v4/openim/sendmsg") == "tencent")
        #expect(router.router.groupName(claiming: "/v4/no/such/command") == "tencent")
        #expect(router.router.groupName(claiming: "/v4") == "tencent")
        #expect(router.router.groupName(claiming: "/v4x") == nil)
        #expect(router.router.groupName(claiming: "/api/v1/push") == nil)
        // A path under /v4/ that no route matches, or bare /v4 (a GET too: no static files there).
        for method in [HTTPMethod.GET, .POST] {
            for path in ["/v4/openim", "/v4", "/v4/"] {
                let response = try await router.send(method, path)
                #expect(response.status == 200, "\(method) \(path)")
                #expect(response.jsonObject["ErrorCode"] as? Int == 60002, "\(method) \(path): \(response.text)")
            }
        }
    }

    @Test func bodiesAreUTF8JSONObjectsWithOrWithoutContentType() throws {
        #expect(try TencentBody.parse(Array(#"{"Text":"你好"}"#.utf8)) == ["Text": "你好"])
        #expect(try TencentBody.parse([0xEF, 0xBB, 0xBF] + Array("{}".utf8)) == [:])
        #expect(try TencentBody.parse([]) == [:])
        for bad in [Array("{bad".utf8), Array("[1]".utf8), [0x7B, 0xFF, 0x7D], Array(#"{"a":1}x"#.utf8)] {
            #expect(throws: TencentError.self) { try TencentBody.parse(bad) }
            do {
                _ = try TencentBody.parse(bad)
            } catch {
                #expect(error.code == 90001)
            }
        }
    }

    @Test func settingsDeclareWhatTheConsoleAndCLIShow() throws {
        let settings = Dictionary(uniqueKeysWithValues: TencentKeys.settings.map { ($0.key, $0) })
        let sdkAppID = try #require(settings["sdkappid"])
        #expect(sdkAppID.isUniqueAcrossApps && sdkAppID.isRequired && sdkAppID.cliFlag == "sdkappid")
        #expect(sdkAppID.problem("1400000000") == nil && sdkAppID.problem("14x") != nil && sdkAppID.problem("0") != nil)
        let secret = try #require(settings["secret_key"])
        #expect(secret.isSecret && secret.cliFlag == "secret" && secret.storageKey == "secret_key_sealed")
        #expect(secret.problem("has space") != nil)
        let admin = try #require(settings["admin_identifier"])
        #expect(!admin.isRequired && admin.cliFlag == "admin" && admin.defaultValue == "administrator")
        #expect(admin.problem("ops_admin") == nil && admin.problem("bad id!") != nil)
    }
}
