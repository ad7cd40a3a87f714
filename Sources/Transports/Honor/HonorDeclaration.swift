import TuisongCore
import TuisongTransportKit

extension HonorService {
    /// Honor as the gateway's transport registry knows it: Push Kit, an OAuth 2.0 client as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .honor, displayName: "Honor", withArticle: "an Honor"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: HonorService.defaultSendURL),
            TransportConfigKey("token_url", .url(required: true), default: HonorService.defaultTokenURL),
        ],
        credentialForm: .appClient(
            .honor, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "Client ID", zh: "客户端 ID"),
            secret: .init(en: "Client secret", zh: "客户端密钥"), badgeClass: true),
        make: { context in
            try .tokenBatch(
                HonorService(baseURL: context.url("url"), tokenURL: context.url("token_url", localPath: "/auth/token")),
                context)
        },
        serviceCodes: serviceCodes,
        renderBody: { HonorService().serviceBody($0) })

    /// Honor's token endpoint and push codes (docs/reference/android.md §4: its numbers are
    /// Huawei Push Kit's inside Honor's envelope).
    static let serviceCodes: [String: String] = [
        "invalid_client": "Honor's OAuth server refused the client: the client ID or client secret is wrong",
        "unauthorized_client": "the client may not ask for an access token",
        "80200001": "authentication error: the access token is missing, wrong, or another app's",
        "80200003": "the access token expired",
        "80300002": "the app may not send to these tokens (no push permission)",
        "80300007": "every token is invalid",
        "80300008": "the message body is larger than 4,096 bytes",
        "80300010": "the number of tokens is not 1 to 1,000",
        "80100003": "the message structure is incorrect",
        "81000001": "Honor internal error; retried later",
        "HTTP401": "Honor refused the client's credentials",
    ]
}
