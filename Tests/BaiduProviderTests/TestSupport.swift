import Foundation
import Logging
import Synchronization
import Testing
import TuisongAPNsTransport
import TuisongCore
import TuisongCrypto
import TuisongHTTP
import TuisongPlugin
import TuisongPluginTestKit
import TuisongStore

@testable import BaiduProvider

/// One Baidu provider on a loopback HTTP server with its own temporary database (a SQLite file,
/// or a database in the PostgreSQL test cluster), an app with Baidu keys, a manual clock and a
/// recording gateway.
final class BaiduFixture: Sendable {
    static let apiKey = "Ljc710pzAa99GULCo8y48NvB"
    static let secretKey = "87772555E1C16715EBA5C85341684C58"

    let temporary: PluginTestStore
    let store: any GatewayStore
    let clock: ManualClock
    /// What the provider submits to: a `RecordingGateway` unless the test built another.
    let pushGateway: any PushGateway
    let server: HTTPServer
    let app: App
    let baseURL: String
    let provider: BaiduProvider

    /// The recording gateway (for fixtures built without another gateway).
    var gateway: RecordingGateway { pushGateway as! RecordingGateway }

    init(
        on backend: PluginStoreBackend = .sqlite, configuration: JSONValue? = nil,
        gateway makeGateway: (any GatewayStore, ManualClock) -> any PushGateway = {
            RecordingGateway(store: $0, clock: $1)
        }
    ) async throws {
        clock = ManualClock()
        temporary = try PluginTestStore(backend, providers: [BaiduProvider.self], clock: clock)
        store = temporary.store
        pushGateway = makeGateway(store, clock)
        let sealer = try TestSealer()
        var app = try await store.createApp(name: "demo", bundleID: "com.example.demo", apiKeyHash: UUID().uuidString)
        app.vendorSettings["baidu"] = try BaiduKeys(
            apiKey: Self.apiKey, secretKey: Self.secretKey, baiduAppID: "1234567"
        ).settings(appID: app.id, sealer: sealer)
        try await store.updateApp(app)
        self.app = app
        let provider = try BaiduProvider(
            context: temporary.context(gateway: pushGateway, secrets: sealer, configuration: configuration))
        self.provider = provider
        let router = Router(defaultBodyLimit: 1 << 20)
        provider.register(on: router)
        server = HTTPServer(configuration: .init(host: "127.0.0.1", port: 0, threads: 2), router: router)
        try server.start()
        baseURL = "http://127.0.0.1:\(server.port)"
    }

    func stop() async {
        await server.shutdown()
        temporary.remove()
    }

    var now: Int { Int(clock.now.timeIntervalSince1970) }

    // MARK: Calls

    /// A signed REST call: `apikey` and `timestamp` added unless given, signed by the Python
    /// script the way Baidu's Python SDK signs (or another SDK's encoding).
    func rest(
        _ path: String, _ parameters: [String: String], method: String = "POST", encoding: SignatureStyle = .python,
        secret: String = BaiduFixture.secretKey, sign: String? = nil
    ) async throws -> TestResponse {
        var parameters = parameters
        if parameters["apikey"] == nil { parameters["apikey"] = Self.apiKey }
        if parameters["timestamp"] == nil { parameters["timestamp"] = String(now) }
        let url = baseURL + path
        if let sign {
            parameters["sign"] = sign
        } else {
            let unsigned = parameters
            parameters["sign"] = try await offPool {
                try signWithPython(method: method, url: url, parameters: unsigned, secret: secret, style: encoding)
            }
        }
        return try await send(method: method, url: url, parameters: parameters)
    }

    /// Sends form parameters as they are (no signing).
    func send(method: String, url: String, parameters: [String: String]) async throws -> TestResponse {
        let form = formEncode(parameters)
        if method == "GET" {
            return try await http(method: "GET", url: url + "?" + form, body: nil, contentType: nil)
        }
        return try await http(
            method: method, url: url, body: Data(form.utf8), contentType: "application/x-www-form-urlencoded")
    }

    /// A device-side JSON call.
    func device(_ call: String, _ body: [String: Any]) async throws -> TestResponse {
        try await http(
            method: "POST", url: "\(baseURL)/baidu/device/\(call)",
            body: try JSONSerialization.data(withJSONObject: body),
            contentType: "application/json")
    }

    /// Binds `token` and returns (user_id, channel_id).
    @discardableResult
    func bind(_ token: String, mode: String = "production") async throws -> (userID: String, channelID: String) {
        let response = try await device("bind", ["apikey": Self.apiKey, "device_token": token, "push_mode": mode])
        #expect(response.status == 200, "\(response.text)")
        let parameters = response.parameters
        return (parameters["user_id"] as? String ?? "", parameters["channel_id"] as? String ?? "")
    }

    func http(method: String, url: String, body: Data?, contentType: String?, headers: [String: String] = [:])
        async throws -> TestResponse
    {
        try await httpCall(method: method, url: url, body: body, contentType: contentType, headers: headers)
    }
}

/// One HTTP exchange over a loopback socket.
func httpCall(method: String, url: String, body: Data?, contentType: String?, headers: [String: String] = [:])
    async throws -> TestResponse
{
    var fields = contentType.map { [("Content-Type", $0)] } ?? []
    for (name, value) in headers.sorted(by: { $0.key < $1.key }) {
        fields.removeAll { $0.0.lowercased() == name.lowercased() }
        fields.append((name, value))
    }
    return try await TestClient.execute(method, url: url, headers: fields, body: Array(body ?? Data()))
}

/// Baidu's envelope on any answer.
extension TestResponse {
    var errorCode: Int? { jsonObject["error_code"] as? Int }
    var errorMessage: String { jsonObject["error_msg"] as? String ?? "" }
    var requestID: Int? { jsonObject["request_id"] as? Int }
    var parameters: [String: Any] { jsonObject["response_params"] as? [String: Any] ?? [:] }
}

/// `application/x-www-form-urlencoded` as Python's `requests` writes it.
func formEncode(_ parameters: [String: String]) -> String {
    var allowed = CharacterSet.alphanumerics
    allowed.insert(charactersIn: "-._~")
    return parameters.sorted { $0.key < $1.key }.map { name, value in
        let encode = { (text: String) in
            text.addingPercentEncoding(withAllowedCharacters: allowed)!.replacingOccurrences(of: "%20", with: "+")
        }
        return encode(name) + "=" + encode(value)
    }.joined(separator: "&")
}

/// How the signing SDK url-encodes the signed text.
enum SignatureStyle: String, Sendable, CaseIterable {
    /// Baidu's Python SDK: `urllib.parse.quote_plus`.
    case python
    /// Baidu's Java SDK: `URLEncoder.encode`, then `*` → `%2A`.
    case java
    /// Baidu's Node SDK: `encodeURIComponent`, then `!'()*~` encoded and `%20` → `+`.
    case node
    /// RFC 3986 (`encodeURIComponent` with `!'()*` encoded, spaces as `%20`).
    case rfc3986
}

/// The signer, written from Baidu's documented algorithm independently of the plugin:
/// md5(urlencode(method + url + sorted k=v + secret)).
let pythonSigner = #"""
    import hashlib, json, sys, urllib.parse

    def encode_uri_component(text):
        # JavaScript's encodeURIComponent leaves A-Z a-z 0-9 - _ . ! ~ * ' ( ) alone.
        return urllib.parse.quote(text, safe="-_.!~*'()")

    def encode(text, style):
        if style == "python":
            return urllib.parse.quote_plus(text)
        if style == "java":
            # URLEncoder keeps . - * _ and encodes ~; the SDK then turns * into %2A.
            return urllib.parse.quote_plus(text, safe="*").replace("~", "%7E").replace("*", "%2A")
        if style == "node":
            encoded = encode_uri_component(text)
            for c in "!'()*~":
                encoded = encoded.replace(c, "%%%02X" % ord(c))
            return encoded.replace("%20", "+")
        if style == "rfc3986":
            encoded = encode_uri_component(text)
            for c in "!'()*":
                encoded = encoded.replace(c, "%%%02X" % ord(c))
            return encoded
        raise SystemExit("unknown style " + style)

    request = json.load(sys.stdin)
    params = request["params"]
    text = request["method"] + request["url"]
    for key in sorted(params):
        if key != "sign":
            text += key + "=" + params[key]
    text += request["secret"]
    print(hashlib.md5(encode(text, request["style"]).encode("utf-8")).hexdigest())
    """#

func signWithPython(method: String, url: String, parameters: [String: String], secret: String, style: SignatureStyle)
    throws -> String
{
    let input = try JSONSerialization.data(withJSONObject: [
        "method": method, "url": url, "params": parameters, "secret": secret, "style": style.rawValue,
    ])
    let run = try Python3.run(pythonSigner, input: Array(input))
    guard run.status == 0 else { throw SignerError(description: "python3 failed: \(run.errors)") }
    return String(decoding: run.output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Runs a program with `input` on standard input; its trimmed standard output.
func run(_ executable: String, _ arguments: [String], input: Data, directory: URL? = nil) throws -> String {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: executable)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(input)
    try stdin.fileHandleForWriting.close()
    let output = stdout.fileHandleForReading.readDataToEndOfFile()
    let errors = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else {
        throw SignerError(
            description: "\(arguments.first ?? executable) failed: \(String(decoding: errors, as: UTF8.self))")
    }
    return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
}

struct SignerError: Error, CustomStringConvertible {
    let description: String
}

/// A valid 64-hex-digit token distinct per `n`.
func token(_ n: Int) -> String { testToken(n, prefix: String(repeating: "a", count: 48)) }

/// The JSON of a recorded job's payload, as the gateway renders it.
func payloadJSON(_ job: PushJob) -> [String: Any] {
    let bytes = APNsPayload.render(job.content)
    return (try? JSONSerialization.jsonObject(with: Data(bytes))) as? [String: Any] ?? [:]
}

/// Runs `body` with a fresh fixture on `backend` and always stops it.
func withFixture(
    on backend: PluginStoreBackend = .sqlite, configuration: JSONValue? = nil,
    gateway: (any GatewayStore, ManualClock) -> any PushGateway = { RecordingGateway(store: $0, clock: $1) },
    _ body: (BaiduFixture) async throws -> Void
) async throws {
    let fixture = try await BaiduFixture(on: backend, configuration: configuration, gateway: gateway)
    do {
        try await body(fixture)
    } catch {
        await fixture.stop()
        throw error
    }
    await fixture.stop()
}

extension BaiduFixture {
    /// Baidu's data, as the provider stores it.
    var baidu: BaiduStore { provider.baiduStore }

    /// A Channel API 2.0 call (`/rest/2.0/channel/channel` unless `channel` names one).
    func channel(_ method: String, _ parameters: [String: String] = [:], channel: String = "channel")
        async throws -> TestResponse
    {
        var parameters = parameters
        parameters["method"] = method
        return try await rest("/rest/2.0/channel/\(channel)", parameters)
    }

    /// A REST API 3.0 call.
    func v3(_ method: String, _ parameters: [String: String] = [:], httpMethod: String = "POST") async throws
        -> TestResponse
    {
        try await rest("/rest/3.0/\(method)", parameters, method: httpMethod)
    }

    func deviceRecord(channel: String) async throws -> BaiduDevice {
        try #require(try await provider.baiduStore.device(appID: app.id, channelID: channel))
    }

    func messageCount() async throws -> Int {
        try await store.messages(appID: app.id, limit: 1000).count
    }
}

/// Checks a Baidu error answer: the code, a non-200 status, the envelope.
func expectError(
    _ response: TestResponse, _ code: Int, status: Int? = nil, mentioning: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.errorCode == code, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.status != 200, sourceLocation: sourceLocation)
    if let status { #expect(response.status == status, "\(response.text)", sourceLocation: sourceLocation) }
    #expect(response.requestID != nil, sourceLocation: sourceLocation)
    #expect(response.jsonObject["response_params"] == nil, sourceLocation: sourceLocation)
    if let mentioning {
        #expect(response.errorMessage.contains(mentioning), "\(response.errorMessage)", sourceLocation: sourceLocation)
    }
}

/// Checks a success answer and returns its `response_params`.
@discardableResult
func expectSuccess(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) -> [String: Any] {
    #expect(response.status == 200, "\(response.text)", sourceLocation: sourceLocation)
    #expect(response.requestID != nil, sourceLocation: sourceLocation)
    #expect(response.jsonObject["response_params"] is [String: Any], "\(response.text)", sourceLocation: sourceLocation)
    return response.parameters
}
