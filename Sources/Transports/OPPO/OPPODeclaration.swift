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
        receipts: OPPOReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { OPPOService().serviceBody($0) })

    /// OPPO Push's return codes (docs/reference/android.md §9, OPPO's "返回码" table).
    static let serviceCodes: [String: String] = [
        "11": "invalid auth token (unknown, another app's, expired or revoked)",
        "13": "the app's call limit is reached",
        "14": "invalid AppKey",
        "16": "invalid signature: the MasterSecret is wrong",
        "19": "invalid timestamp: this server's clock is off",
        "28": "the app is disabled",
        "29": "the auth token is missing",
        "30": "API permission denied: the app may not use this API",
        "33": "the number of messages exceeds the daily limit",
        "41": "invalid arguments",
        "55": "the app's call frequency limit is reached",
        "10000": "invalid registration id",
        "-1": "OPPO's service is unavailable; retried later",
    ]
}
