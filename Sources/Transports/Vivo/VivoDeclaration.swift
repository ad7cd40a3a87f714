import TuisongCore
import TuisongTransportKit

extension VivoService {
    /// vivo as the gateway's transport registry knows it: AppID, AppKey and AppSecret as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(
            channel: .vivo, displayName: "vivo", withArticle: "a vivo", options: VivoOptions.rule,
            androidFields: VivoOptions.androidFields),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: VivoService.defaultSendURL)
        ],
        credentialForm: .appClient(
            .vivo, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "AppKey", zh: "AppKey"),
            secret: .init(en: "AppSecret", zh: "AppSecret"), receiptID: true),
        make: { context in
            try .tokenBatch(VivoService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: VivoReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { VivoService().serviceBody($0) })

    /// vivo Push's codes (docs/reference/android.md §10).
    static let serviceCodes: [String: String] = [
        "10000": "authentication failed: the auth token is missing, unknown or expired (权限认证失败)",
        "10200": "the App ID is empty",
        "10201": "the AppKey is empty",
        "10204": "the timestamp is out of range: this server's clock is off",
        "10205": "the App ID does not exist",
        "10206": "the AppKey is wrong",
        "10207": "the signature is wrong: the AppSecret is wrong",
        "10094": "the App ID does not match the auth token's app",
        "10302": "invalid registration id",
        "10054": "invalid registration id",
        "10070": "the total sent exceeds the daily limit",
        "10073": "the system's total exceeds the daily limit",
        "10071": "outside the hours operation messages may be sent",
        "10072": "sending too fast",
        "10040": "vivo asks to retry later",
    ]
}
