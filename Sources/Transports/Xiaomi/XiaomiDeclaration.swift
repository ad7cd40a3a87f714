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
        receipts: XiaomiReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { XiaomiService().serviceBody($0) })

    /// MiPush's codes (docs/reference/android.md §8).
    static let serviceCodes: [String: String] = [
        "21301": "authentication failed: the AppSecret is not this app's (认证失败)",
        "20301": "every registration id is invalid",
        "200001": "the app's daily push limit is reached",
        "21305": "a required parameter is missing",
        "10017": "a parameter value is invalid (the package name may not belong to the app)",
        "10002": "Xiaomi is busy; retried later",
        "10003": "Xiaomi is busy; retried later",
    ]
}
