import Foundation
import TuisongCore
import TuisongTransportKit

extension FCMTransport {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.fcm`) and the CLI (`--channel fcm`) call it.
    public static let channel = PushChannel("fcm")

    /// FCM as the gateway's transport registry knows it: Google's service, opaque tokens, the
    /// service-account JSON as its credential, `transports.fcm.{url,token_url,clients,connections}`.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: FCMTransport.channel, displayName: "FCM", withArticle: "an FCM"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: "https://fcm.googleapis.com"),
            TransportConfigKey("token_url", .url(required: false), default: ""),
            TransportConfigKey("clients", .integer(1...16), default: "1"),
            TransportConfigKey("connections", .integer(1...64), default: "2"),
        ],
        credentialForm: CredentialForm(
            fields: [
                .init(
                    "file", .file, label: .init(en: "Service account JSON", zh: "服务账号 JSON"),
                    help:
                        "the service-account JSON file Firebase's console downloads (Project settings › Service accounts › Generate new private key)",
                    helpZH: "Firebase 控制台下载的服务账号 JSON 文件（项目设置 › 服务账号 › 生成新的私钥）",
                    accept: ".json,application/json",
                    cliName: "service-account")
            ],
            validate: { (input, context) throws(CredentialFormError) -> ValidatedCredential in
                guard let json = input.files["file"], !json.isEmpty else {
                    throw CredentialFormError(
                        "invalid_service_account", field: "file",
                        "choose the service-account JSON file Firebase's console downloads",
                        zh: "请选择 Firebase 控制台下载的服务账号 JSON 文件")
                }
                let account: FCMServiceAccount
                do {
                    account = try FCMServiceAccount(json: json)
                } catch {
                    let invalid = error as? FCMServiceAccount.Invalid
                    throw CredentialFormError(
                        "corrupt_file", field: "file", invalid?.description ?? "\(error)", zh: invalid?.zh)
                }
                try checkShape(of: account, testTokenHosts: context.testTokenHosts)
                return ValidatedCredential(
                    vendorAppID: account.projectID, clientID: account.clientEmail, secret: account.json)
            }),
        make: { context in
            let transport = try FCMTransport(
                connections: FCMTransport.Connections(
                    pools: context.section.integer("clients", default: 1),
                    connectionsPerPool: context.section.integer("connections", default: 2),
                    connectTimeout: context.connectTimeout, caFile: context.caFile),
                tokenClient: try context.client("fcm-token"),
                resolver: context.resolver,
                endpoints: FCMTransport.Endpoints(
                    sendURL: context.url("url"),
                    // In local mode every account, the uploaded ones too, signs in at the look-alike;
                    // otherwise a configured token_url replaces every account's (a test's look-alike).
                    tokenURL: context.localBaseURL.map { $0 + "/token" } ?? context.section.optional("token_url")),
                requestTimeout: context.requestTimeout, clock: context.clock, logger: context.logger,
                appReceipts: context.appReceipts)
            return TransportInstance(
                transport: transport, tokens: transport.tokens, statistics: { transport.statistics },
                shutdown: { await transport.shutdown() }, checkSignIn: { await transport.checkSignIn($0) },
                quotaExhausted: nil)
        },
        serviceCodes: serviceCodes,
        renderBody: { request in
            // FCM's own message for one token; what FCM would refuse for its size is skipped.
            let template = FCMMessage.Template(content: request.content, headers: request.headers, now: request.now)
            var body = ServiceBody.json(template.body(token: request.token))
            if template.payloadBytes > FCMMessage.payloadLimit { body.skipReason = "payload_too_large" }
            return body
        },
        testTokenHosts: configuredTokenHosts)

    /// The hosts of `transports.fcm.url` and `token_url` when they point elsewhere than Google
    /// (a look-alike, as the tests and local mode run one): a service account may name
    /// them as its `token_uri`.
    static func configuredTokenHosts(_ section: TransportSection) -> Set<String> {
        var hosts: Set<String> = []
        for url in [section["url"], section["token_url"]] {
            guard let host = URLComponents(string: url)?.host?.lowercased(), !host.isEmpty,
                !host.hasSuffix("googleapis.com"), !host.hasSuffix("google.com")
            else { continue }
            hosts.insert(host)
        }
        return hosts
    }

    /// Google's token endpoint (OAuth 2.0, RFC 6749 §5.2) and FCM HTTP v1's error codes
    /// (docs/reference/android.md §1, §2).
    static let serviceCodes: [String: LocalizedText] = [
        "invalid_grant": LocalizedText(
            en:
                "Google refused the service account's signed request: its key was deleted or revoked, the account no longer exists, or this server's clock is off",
            zh: "Google 拒绝了服务账号签名的请求：密钥已删除或吊销、账号已不存在，或本服务器时钟不准"),
        "invalid_client": LocalizedText(
            en: "Google does not know the service account's client",
            zh: "Google 不认识该服务账号的客户端"),
        "unauthorized_client": LocalizedText(
            en: "the service account may not ask for an access token",
            zh: "该服务账号无权申请访问令牌"),
        "invalid_scope": LocalizedText(
            en: "the access token's scope was refused",
            zh: "访问令牌的权限范围被拒绝"),
        "invalid_request": LocalizedText(
            en: "Google's token endpoint refused the request as malformed",
            zh: "Google 的令牌接口认为请求格式错误"),
        "PERMISSION_DENIED": LocalizedText(
            en:
                "the service account may not send for this Firebase project (wrong project, or the FCM API not enabled)",
            zh: "该服务账号无权为此 Firebase 项目发送（项目不对，或未启用 FCM API）"),
        "THIRD_PARTY_AUTH_ERROR": LocalizedText(
            en: "the APNs certificate or web push key configured in Firebase was refused",
            zh: "Firebase 中配置的 APNs 证书或 Web Push 密钥被拒绝"),
        "UNAUTHENTICATED": LocalizedText(
            en: "FCM did not take the access token",
            zh: "FCM 不接受该访问令牌"),
        "SENDER_ID_MISMATCH": LocalizedText(
            en: "the device token belongs to another Firebase project",
            zh: "设备令牌属于另一个 Firebase 项目"),
        "UNREGISTERED": LocalizedText(
            en: "the app was uninstalled or the token is no longer valid",
            zh: "应用已卸载或令牌已失效"),
        "INVALID_ARGUMENT": LocalizedText(
            en: "the message or the device token is not valid",
            zh: "消息或设备令牌无效"),
        "QUOTA_EXCEEDED": LocalizedText(
            en: "FCM's sending rate limit was reached",
            zh: "已达到 FCM 的发送速率上限"),
        "UNAVAILABLE": LocalizedText(
            en: "FCM is overloaded; retried later",
            zh: "FCM 过载，稍后重试"),
        "INTERNAL": LocalizedText(
            en: "FCM had an internal error; retried later",
            zh: "FCM 内部错误，稍后重试"),
        "HTTP401": LocalizedText(
            en: "FCM did not take the access token",
            zh: "FCM 不接受该访问令牌"),
        "HTTP403": LocalizedText(
            en: "FCM refused the sender (no permission for the project)",
            zh: "FCM 拒绝了发送方（无该项目的权限）"),
    ]

    /// Google's hosts for a service account's token endpoint (`token_uri` of a downloaded key
    /// file: `https://oauth2.googleapis.com/token`; older files `accounts.google.com`).
    public static let googleTokenHosts: Set<String> = ["oauth2.googleapis.com", "accounts.google.com"]

    /// The fields Google's console fills, checked against the shapes Google gives them: they end
    /// up in URLs (`/v1/projects/{project_id}/messages:send`), in signed assertions and in the
    /// console, and `token_uri` is where the gateway sends a signed assertion.
    static func checkShape(of account: FCMServiceAccount, testTokenHosts: Set<String>) throws(CredentialFormError) {
        // Google: "6 to 30 lowercase letters, digits, or hyphens; start with a letter; no
        // trailing hyphen".
        let project = Array(account.projectID.utf8)
        guard (6...30).contains(project.count), let first = project.first, let last = project.last,
            first >= UInt8(ascii: "a") && first <= UInt8(ascii: "z"), last != UInt8(ascii: "-"),
            project.allSatisfy({ isLowerAlphanumeric($0) || $0 == UInt8(ascii: "-") })
        else {
            throw CredentialFormError(
                "invalid_service_account", field: "file",
                "the service account's project_id must be a Google Cloud project id: 6 to 30 lowercase letters, digits or hyphens, starting with a letter",
                zh: "服务账号的 project_id 须为 Google Cloud 项目 ID：6 到 30 个小写字母、数字或连字符，以字母开头")
        }
        guard isEmailAddress(account.clientEmail) else {
            throw CredentialFormError(
                "invalid_service_account", field: "file",
                "the service account's client_email must be an email address, e.g. push@my-project.iam.gserviceaccount.com",
                zh: "服务账号的 client_email 须为邮箱地址，例如 push@my-project.iam.gserviceaccount.com")
        }
        guard let uri = URLComponents(string: account.tokenURI), uri.scheme?.lowercased() == "https",
            let host = uri.host?.lowercased(), googleTokenHosts.contains(host) || testTokenHosts.contains(host),
            uri.user == nil, uri.password == nil
        else {
            throw CredentialFormError(
                "invalid_service_account", field: "file",
                "the service account's token_uri must be Google's token endpoint, https://oauth2.googleapis.com/token",
                zh: "服务账号的 token_uri 须为 Google 的令牌接口 https://oauth2.googleapis.com/token")
        }
    }

    private static func isLowerAlphanumeric(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    private static func isAlphanumeric(_ byte: UInt8) -> Bool {
        isLowerAlphanumeric(byte) || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }

    /// `local@domain` in ASCII: a local part of letters, digits and `.!#$%&'*+/=?^_`{|}~-` (up to
    /// 64), a domain of at least two dot-separated labels of letters, digits and inner hyphens;
    /// 254 bytes at most (RFC 5321).
    public static func isEmailAddress(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count <= 254, let at = bytes.firstIndex(of: UInt8(ascii: "@")) else { return false }
        let local = bytes[..<at]
        let domain = bytes[(at + 1)...]
        let localSymbols = Set(".!#$%&'*+/=?^_`{|}~-".utf8)
        guard (1...64).contains(local.count),
            local.allSatisfy({ isAlphanumeric($0) || localSymbols.contains($0) })
        else { return false }
        let labels = domain.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        return labels.count >= 2
            && labels.allSatisfy { label in
                (1...63).contains(label.count) && label.first != UInt8(ascii: "-") && label.last != UInt8(ascii: "-")
                    && label.allSatisfy { isAlphanumeric($0) || $0 == UInt8(ascii: "-") }
            }
    }
}
