import Foundation
import Synchronization
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient
import TuisongTransportKit

extension PushChannel {
    /// A transport kept in the tests (`Tests/Transports/Echo`): it hands nothing to a network.
    public static let echo = PushChannel("echo")
}

/// A transport kept in the tests, declared and registered exactly as a real one: its folder,
/// a name in Package.swift's `testTransports` list, and the registry line a test adds
/// (`TransportRegistry.standard.adding(EchoTransport.declaration)`, as the tests' binary
/// `tuisong-with-test-transports` does: its CLI flags and console form come from the
/// declaration below). It "delivers" each push by
/// writing down its token, title, the credential it was sent with and its own options (the
/// message's `echo` object: `{"room": "lobby"}`, checked by the rule it declares); a push whose
/// app has no echo credential is held `no_credential`, as every service's is. In local mode with
/// its look-alike registered (`LookAlike/`), it also sends each push there over HTTP, as a real
/// transport sends to its service, and reports what the look-alike answered.
public final class EchoTransport: PushTransport {
    /// What one push handed to it carried.
    public struct Echoed: Sendable, Hashable {
        public var token: String
        public var title: String?
        public var account: String
        public var url: String
        /// The message's `echo` options, as the declared rule normalised them.
        public var options: JSONValue?
    }

    /// Its options: `room`, 1–32 lower-case letters.
    public static let optionsRule = ServiceOptionsRule { (value) throws(ServiceOptionsError) -> JSONValue? in
        let reader = try ServiceOptionsReader(value, known: ["room"])
        guard let room = try reader.string("room", limit: 32) else { return nil }
        guard room.allSatisfy({ $0.isASCII && $0.isLowercase }) else {
            throw ServiceOptionsError(field: "room", "must be lower-case letters")
        }
        return ["room": .string(room)]
    }

    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .echo, displayName: "Echo", withArticle: "an Echo", options: optionsRule),
        configKeys: [TransportConfigKey("url", .url(required: true), default: "https://echo.invalid/v1")],
        credentialForm: CredentialForm(
            fields: [
                .init(
                    "account", label: .init(en: "Account", zh: "账号"), help: "the echo account, letters only",
                    helpZH: "Echo 账号，只含字母", placeholder: "tester",
                    refusal: .init(en: "The Echo account is letters only.", zh: "Echo 账号只能包含字母。")),
                .init(
                    "api_key", .secret, label: .init(en: "API key", zh: "API 密钥"),
                    help: "the echo API key, 8 characters or more", helpZH: "Echo 的 API 密钥，至少 8 个字符"),
            ],
            validate: { (input, _) throws(CredentialFormError) -> ValidatedCredential in
                let account = input.text("account")
                guard !account.isEmpty, account.allSatisfy({ $0.isASCII && $0.isLetter }) else {
                    throw CredentialFormError("invalid_account", field: "account", "the account is letters only")
                }
                guard let key = input.values["api_key"], key.count >= 8 else {
                    throw CredentialFormError(
                        "invalid_api_key", field: "api_key", "the API key has 8 characters or more")
                }
                return ValidatedCredential(vendorAppID: account, clientID: account, secret: Array(key.utf8))
            }),
        make: { context in
            // Only its look-alike listens: elsewhere it hands nothing to a network.
            let client = context.localBaseURL == nil ? nil : try context.client("echo")
            let transport = EchoTransport(
                url: context.url("url", localPath: "/echo/v1/send"), resolver: context.resolver, clock: context.clock,
                client: client)
            return TransportInstance(
                transport: transport, tokens: AccessTokenCache(clock: context.clock), statistics: { .init() },
                shutdown: { client?.shutdown() }, checkSignIn: nil, quotaExhausted: nil)
        })

    let url: String
    let resolver: ChannelCredentialResolver
    /// The client to its look-alike, in local mode.
    let client: HTTPClient?
    private let log = Mutex<[Echoed]>([])

    /// Every echo transport made, by the URL it was configured with, so a test finds its own.
    static let made = Mutex<[String: EchoTransport]>([:])

    init(url: String, resolver: ChannelCredentialResolver, clock: any Clock, client: HTTPClient? = nil) {
        self.url = url
        self.resolver = resolver
        self.client = client
        Self.made.withLock { $0[url] = self }
    }

    /// The transport configured with `url`, once a gateway made it.
    public static func made(url: String) -> EchoTransport? { made.withLock { $0[url] } }

    public var echoed: [Echoed] { log.withLock { $0 } }

    public func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        var reports: [SendReport] = []
        for (index, push) in batch.pushes.enumerated() {
            switch await resolver.resolve(appID: batch.app.id, selector: push.selector) {
            case .refused(let outcome):
                reports.append(SendReport(index: index, outcome: outcome))
            case .credential(let credential):
                let echoed = Echoed(
                    token: push.token, title: push.content.content.title, account: credential.clientID, url: url,
                    options: push.headers.options(for: .echo))
                let count = log.withLock {
                    $0.append(echoed)
                    return $0.count
                }
                guard let client else {
                    reports.append(SendReport(index: index, outcome: .delivered(serviceMessageID: "echo-\(count)")))
                    continue
                }
                reports.append(SendReport(index: index, outcome: await post(echoed, key: credential.secret, client)))
            }
        }
        report(reports)
    }

    /// Sends one push to the look-alike: `POST` JSON with `Authorization: Key <api_key>`.
    private func post(_ echoed: Echoed, key: [UInt8], _ client: HTTPClient) async -> SendOutcome {
        var object: [String: Any] = ["account": echoed.account, "token": echoed.token]
        if let title = echoed.title { object["title"] = title }
        if case .object(let options)? = echoed.options, case .string(let room)? = options["room"] {
            object["options"] = ["room": room]
        }
        let body = (try? JSONSerialization.data(withJSONObject: object)).map { Array($0) } ?? []
        let request = HTTPClientRequest(
            url: url,
            headers: [
                ("Content-Type", "application/json"), ("Authorization", "Key " + String(decoding: key, as: UTF8.self)),
            ],
            body: body)
        switch await client.execute(request) {
        case .failure(let error):
            return .retry(.transport(error.code), after: nil)
        case .success(let response):
            let answer = (try? JSONSerialization.jsonObject(with: Data(response.body))) as? [String: Any]
            switch response.status {
            case 200: return .delivered(serviceMessageID: answer?["id"] as? String)
            case 410: return .invalidate(.service("unregistered"), since: nil)
            case 503: return .retry(.service("unavailable"), after: nil)
            default: return .failed(.service(answer?["error"] as? String ?? "http_\(response.status)"))
            }
        }
    }
}
