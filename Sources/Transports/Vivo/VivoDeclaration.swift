import TuisongCore
import TuisongTransportKit

extension VivoService {
    /// vivo as the gateway's transport registry knows it: AppID, AppKey and AppSecret as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .vivo, displayName: "vivo", withArticle: "a vivo"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: VivoService.defaultSendURL)
        ],
        credentialForm: .appClient(
            .vivo, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "AppKey", zh: "AppKey"),
            secret: .init(en: "AppSecret", zh: "AppSecret"), receiptID: true),
        make: { context in
            try .tokenBatch(VivoService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: VivoReceipts.declaration)
}
