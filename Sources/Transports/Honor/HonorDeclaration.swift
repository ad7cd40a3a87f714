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
        renderBody: { HonorService().serviceBody($0) })
}
