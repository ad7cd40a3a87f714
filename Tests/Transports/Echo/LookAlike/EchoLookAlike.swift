import Foundation
import Synchronization
import TuisongLookAlikeKit

extension AndroidPushService {
    /// The look-alike of the test-only Echo transport.
    public static let echo = AndroidPushService("echo")
}

/// The look-alike of the test-only Echo transport, declared and registered exactly as a real
/// service's: its folder (`Tests/Transports/Echo/LookAlike`, a target Package.swift makes from
/// the `testTransports` list) and the registry line a test adds
/// (`LookAlikeRegistry.standard.adding(EchoLookAlike.declaration)`).
///
/// `POST /echo/v1/send` with `Authorization: Key <api_key>` and a JSON body
/// `{"account", "token", "title", "options"}`: 200 `{"id": "echo-<n>"}` for a trusted account
/// and key; 401 `{"error": "unknown_account"}` otherwise. Token faults: `unregistered` and
/// `invalidArgument` are 410 `{"error": "unregistered"}`; the others 503 `{"error":
/// "unavailable"}`. It posts no receipts.
package final class EchoLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .echo, summary: "Echo (POST /echo/v1/send)",
        configurationKeys: [("echoAccounts", #"{"account","apiKey"}"#)], setupKeys: ["echoAccount"],
        makeSetup: { setup in
            try setup.setLookAlikeMaterial(
                "echoAccount",
                Account(
                    account: "lookalike", apiKey: EchoLookAlike.randomString(count: 24, alphabet: "abcdef0123456789")))
        },
        configure: { configuration, setup in
            var accounts = configuration.lookAlikeList("echoAccounts", of: Account.self)
            accounts.append(setup.lookAlikeMaterial("echoAccount", as: Account.self))
            configuration.setLookAlikeList("echoAccounts", accounts)
        },
        start: { host, configuration in try EchoLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, _ in
            let account = setup.lookAlikeMaterial("echoAccount", as: Account.self)
            return LookAlikeCredential(
                vendorAppID: account.account, clientID: account.account, secret: Array(account.apiKey.utf8))
        },
        banner: { setup, base, _ in
            let account = setup.lookAlikeMaterial("echoAccount", as: Account.self)
            return ["send_url": base + "/echo/v1/send", "account": account.account, "api_key": account.apiKey]
        })

    /// An Echo account and its API key.
    struct Account: Sendable, Codable, Equatable {
        var account: String
        var apiKey: String
    }

    package let service = AndroidPushService.echo
    package let host: LookAlikeHost
    /// API keys by account; growable at run time.
    private let keys: Mutex<[String: String]>
    private let sent = Atomic<Int>(0)

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        let accounts = try configuration.lookAlikeSetting("echoAccounts", as: [Account].self) ?? []
        keys = Mutex(Dictionary(accounts.map { ($0.account, $0.apiKey) }, uniquingKeysWith: { first, _ in first }))
    }

    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) {
        keys.withLock { $0[clientID] = String(decoding: secret, as: UTF8.self) }
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        guard request.pathWithoutQuery == "/echo/v1/send" else { return nil }
        func refuse(_ status: Int, _ error: String) -> AndroidResponse {
            recorder.update(.echo) { $0.requestsRefused += 1 }
            return AndroidResponse(status: status, json: #"{"error":"\#(error)"}"#, service: .echo, code: error)
        }
        guard request.method == "POST", let body = MockJSON.parse(request.body),
            let account = body["account"]?.stringValue, let token = body["token"]?.stringValue
        else { return refuse(400, "bad_request") }
        guard let key = keys.withLock({ $0[account] }), request.authorization == "Key \(key)" else {
            recorder.update(.echo) { $0.authenticationFailures += 1 }
            return refuse(401, "unknown_account")
        }
        switch faults.fault(forToken: token)?.kind {
        case nil: break
        case .unregistered, .invalidArgument: return refuse(410, "unregistered")
        case .quotaExceeded, .unavailable, .internal: return refuse(503, "unavailable")
        }
        let id = "echo-\(sent.add(1, ordering: .relaxed).newValue)"
        recorder.update(.echo) { $0.messagesDelivered += 1 }
        acceptedPush(
            ReceivedAndroidMessage(
                service: .echo, target: account, principal: account, tokens: [token], refusedTokens: [],
                messageID: id, body: request.body, connectionID: request.connectionID, streamID: request.streamID,
                timestampHeader: nil, receivedAtMilliseconds: request.receivedAtMilliseconds))
        var response = AndroidResponse(status: 200, json: #"{"id":"\#(id)"}"#, service: .echo, code: nil)
        response.target = account
        response.principal = account
        response.tokenCount = 1
        return response
    }
}
