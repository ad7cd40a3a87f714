import TuisongCore
import TuisongTransportKit

extension OPPOService {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`transports.oppo`) and the CLI (`--channel oppo`) call it.
    public static let channel = PushChannel("oppo")

    /// OPPO as the gateway's transport registry knows it: AppID, AppKey and MasterSecret as its credential.
    public static let declaration = TransportDeclaration(
        channel: ChannelDeclaration(channel: OPPOService.channel, displayName: "OPPO", withArticle: "an OPPO"),
        configKeys: [
            TransportConfigKey("url", .url(required: true), default: OPPOService.defaultSendURL)
        ],
        credentialForm: .appClient(
            OPPOService.channel, appID: .init(en: "App ID", zh: "App ID"), clientID: .init(en: "AppKey", zh: "AppKey"),
            secret: .init(en: "MasterSecret", zh: "MasterSecret")),
        make: { context in
            try .tokenBatch(OPPOService(baseURL: context.url("url"), receipts: context.receipts), context)
        },
        receipts: OPPOReceipts.declaration,
        serviceCodes: serviceCodes,
        renderBody: { OPPOService().serviceBody($0) })

    /// OPPO Push's return codes (docs/reference/android.md §9, OPPO's "返回码" table).
    static let serviceCodes: [String: LocalizedText] = [
        "11": LocalizedText(
            en: "invalid auth token (unknown, another app's, expired or revoked)",
            zh: "鉴权令牌无效（未知、属于其他应用、已过期或已吊销）"),
        "13": LocalizedText(
            en: "the app's call limit is reached",
            zh: "已达到应用的调用次数上限"),
        "14": LocalizedText(
            en: "invalid AppKey",
            zh: "AppKey 无效"),
        "16": LocalizedText(
            en: "invalid signature: the MasterSecret is wrong",
            zh: "签名无效：MasterSecret 错误"),
        "19": LocalizedText(
            en: "invalid timestamp: this server's clock is off",
            zh: "时间戳无效：本服务器时钟不准"),
        "28": LocalizedText(
            en: "the app is disabled",
            zh: "应用已被禁用"),
        "29": LocalizedText(
            en: "the auth token is missing",
            zh: "缺少鉴权令牌"),
        "30": LocalizedText(
            en: "API permission denied: the app may not use this API",
            zh: "无 API 权限：应用不能使用此接口"),
        "33": LocalizedText(
            en: "the number of messages exceeds the daily limit",
            zh: "消息数量超过每日上限"),
        "41": LocalizedText(
            en: "invalid arguments",
            zh: "参数无效"),
        "55": LocalizedText(
            en: "the app's call frequency limit is reached",
            zh: "已达到应用的调用频率上限"),
        "10000": LocalizedText(
            en: "invalid registration id",
            zh: "注册 ID 无效"),
        "-1": LocalizedText(
            en: "OPPO's service is unavailable; retried later",
            zh: "OPPO 服务不可用，稍后重试"),
    ]
}
