import TuisongCore
import TuisongTransportKit

extension OPPOService {
    /// OPPO as the gateway's transport registry knows it: AppID, AppKey and MasterSecret as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: .oppo, displayName: "OPPO", withArticle: "an OPPO"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: OPPOService.defaultSendURL)
        ],
        credentialForm: .appClient(
            .oppo, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "AppKey", zh: "AppKey"),
            secret: .init(en: "MasterSecret", zh: "MasterSecret")),
        make: { context in
            try .tokenBatch(OPPOService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: OPPOReceipts.declaration)
}
