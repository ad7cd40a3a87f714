import TuisongCore
import TuisongTransportKit

extension XiaomiService {
    /// Xiaomi as the gateway's transport registry knows it: the package name, AppID and AppSecret as its credential (the secret is the key of every request: a push to no id checks it).
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .xiaomi, displayName: "Xiaomi", withArticle: "a Xiaomi"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: XiaomiService.defaultSendURL)
        ],
        credentialForm: .appClient(
            .xiaomi, appID: .init(en: "Package name", zh: "包名"), clientID: .init(en: "AppID", zh: "AppID"),
            secret: .init(en: "AppSecret", zh: "AppSecret"), packageName: true),
        make: { context in
            try .tokenBatch(XiaomiService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: XiaomiReceipts.declaration)
}
