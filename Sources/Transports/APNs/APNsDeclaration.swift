import Foundation
import Logging
import TuisongAPNs
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongTransportKit

extension APNsPushTransport {
    /// Its channel's name, written here once: what devices, the store, the APIs, config
    /// (`apns.*`) and the CLI (`--channel apns`) call it.
    public static let channel = PushChannel("apns")

    /// What the rest of the gateway knows of APNs, installed by the registry like every
    /// transport's: hex tokens that say by their shape whose they are (a token given with no
    /// channel is APNs's), credentials that each serve one environment, and an Apple-style
    /// payload (not Android-style).
    public static let channelDeclaration = ChannelDeclaration(
        channel: channel, displayName: "APNs", withArticle: "an APNs", tokenRule: .hex, takesBareTokens: true,
        credentialsServeEnvironments: true, isAndroidStyle: false)

    /// APNs as the gateway's transport registry knows it: the one channel with hex tokens whose
    /// credentials serve an environment. Made like the others from its context: its `apns.*`
    /// section, its uploaded `.p8`/`.p12`/PEM credentials (`UploadedCredentials`: the store,
    /// how their sealed secrets open, the nodes' shared provider tokens) and, in local mode, the
    /// look-alike (its address, CA and key). One pool per credential and environment.
    public static let declaration = TransportDeclaration(
        channel: channelDeclaration, configKeys: configKeys, make: { context in try make(context) },
        serviceCodes: serviceCodes,
        renderBody: { request in
            // The payload as APNs gets it (the rendering every APNs send uses), or why APNs refuses it.
            do throws(PayloadError) {
                return .json(try APNsPayload.build(request.content, pushType: request.headers.pushType))
            } catch {
                var body = ServiceBody.json(APNsPayload.render(request.content))
                body.skipReason = error.code == .tooLarge ? "payload_too_large" : "invalid_notification"
                return body
            }
        },
        sharedPayload: { content, pushType in
            do throws(PayloadError) {
                return SharedPayload(
                    bytes: try APNsPayload.build(content, pushType: pushType), limit: pushType.apnsPayloadLimit)
            } catch {
                return SharedPayload(
                    bytes: APNsPayload.render(content), limit: pushType.apnsPayloadLimit, refusal: error)
            }
        }, configPath: "apns",
        responseHistogram: .init(
            name: "tuisong_apns_response_seconds",
            help:
                "Seconds from handing a push to the APNs connection pool to APNs's answer (includes waiting for a free stream)."
        ), uploadedCredentialForm: uploadedCredentialForm, notificationFields: notificationFields,
        // Apple refuses `apns-priority: 10` on a background push (content-available alone).
        refusesImmediateBackground: true)

    /// Its section, `apns.*`, where operators have always had it (`TUISONG_APNS_<KEY>`; the
    /// section's `local_mock` and `local_mock_port` are the gateway's local mode, not APNs's).
    static let configKeys = [
        TransportConfigKey("production_url", .httpsURL, default: "https://api.push.apple.com:443"),
        TransportConfigKey("sandbox_url", .httpsURL, default: "https://api.sandbox.push.apple.com:443"),
        TransportConfigKey("ca_file", .file, default: ""),
        TransportConfigKey("connections", .integer(1...64), default: "2"),
        TransportConfigKey("connect_timeout_seconds", .integer(1...300), default: "10"),
        TransportConfigKey("request_timeout_seconds", .integer(1...600), default: "30"),
        TransportConfigKey("token_refresh_minutes", .integer(20...60), default: "50"),
    ]

    /// The transport, its pools' gauges and what the gateway asks of it when its credentials
    /// change. Its section is `apns.*` of the config (`production_url`, `sandbox_url`,
    /// `ca_file`, `connections`, `connect_timeout_seconds`, `request_timeout_seconds`,
    /// `token_refresh_minutes`); in local mode both URLs are the look-alike's.
    static func make(_ context: TransportContext) throws -> TransportInstance {
        guard let uploaded = context.uploadedCredentials else {
            throw APNsSetupError("", "APNs needs the gateway's credential store")
        }
        let section = context.section
        func endpoint(_ key: String) throws -> APNsEndpoint {
            guard let endpoint = APNsEndpoint(url: section[key]) else {
                throw APNsSetupError("apns.\(key)", "\"\(section[key])\" is not an https URL with a host")
            }
            return endpoint
        }
        var endpoints = Endpoints(
            production: try endpoint("production_url"), sandbox: try endpoint("sandbox_url"),
            caFile: section.optional("ca_file"))
        var fallback: Fallback?
        if let local = context.localLookAlike {
            guard let lookAlike = APNsEndpoint(url: local.baseURL) else {
                throw APNsSetupError("apns.local_mock", "\"\(local.baseURL)\" is not an https URL with a host")
            }
            endpoints.production = lookAlike
            endpoints.sandbox = lookAlike
            endpoints.extraCACertificates = [try Certificate(pem: local.caCertificatePEM)]
            // The look-alike's own key: every app without a credential of its own sends with it.
            if let own = local.fallback {
                fallback = Fallback(
                    material: .token(
                        key: try PrivateKey(pem: String(decoding: own.secret, as: UTF8.self)), keyID: own.clientID,
                        teamID: own.vendorAppID))
            }
        }
        let settings = APNsPoolSettings(
            connections: section.integer("connections", default: 2),
            connectTimeout: .seconds(section.integer("connect_timeout_seconds", default: 10)),
            requestTimeout: .seconds(section.integer("request_timeout_seconds", default: 30)),
            tokenRefreshInterval: .seconds(section.integer("token_refresh_minutes", default: 50) * 60))
        let transport = APNsPushTransport(
            credentials: APNsCredentialFiles(opener: uploaded.opener), store: uploaded.store, endpoints: endpoints,
            poolSettings: settings, fallback: fallback, clock: context.clock, providerTokens: uploaded.providerTokens,
            appReceipts: context.appReceipts, logger: context.logger)
        let local = context.localLookAlike
        let hooks = UploadedCredentialHooks(
            changed: { appID in await transport.credentialsChanged(appID: appID) },
            canSend: { route in
                await transport.canSend(appID: route.appID, environment: route.environment, selector: route.selector)
            },
            probe: { record, topic, timeout in try await transport.probe(record, topic: topic, timeout: timeout) },
            testConnection: { record, topic, timeout in
                await transport.testConnection(record, topic: topic, timeout: timeout)
            },
            trustLocally: { record in
                if let local { transport.trust(record, on: local) }
            },
            holdsPerEnvironment: true)
        return TransportInstance(
            transport: transport, tokens: nil, statistics: nil, shutdown: { await transport.shutdown() },
            checkSignIn: nil, quotaExhausted: nil, uploadedCredentials: hooks, gauges: transport.gauges)
    }

    /// Its pools' figures on `/metrics`, per credential and environment (credential 0 = local mode).
    var gauges: [TransportGauge] {
        func perPool(_ value: @escaping @Sendable (PoolStatistics) -> Int)
            -> @Sendable () async -> [(labels: [String], value: Double)]
        {
            {
                self.poolStatistics().map { pool in
                    ([String(pool.credentialID), pool.environment.rawValue], Double(value(pool.statistics)))
                }
            }
        }
        let poolLabels = ["credential", "environment"]
        return [
            TransportGauge(
                "tuisong_apns_connections",
                "Open (ready) HTTP/2 connections per APNs pool (credential 0 = local mode).",
                labels: poolLabels, read: perPool { $0.liveConnections }),
            TransportGauge(
                "tuisong_apns_streams", "HTTP/2 streams in flight per APNs pool.", labels: poolLabels,
                read: perPool { $0.inFlight }),
            TransportGauge(
                "tuisong_apns_waiting_requests", "Pushes waiting for a free stream per APNs pool.",
                labels: poolLabels, read: perPool { $0.queued }),
        ]
    }

    /// APNs's reasons, in Apple's words ("Handling notification responses from APNs";
    /// /work/shared/reference/apns.md).
    static let serviceCodes: [String: LocalizedText] = [
        "BadCertificate": LocalizedText(
            en: "the certificate is invalid",
            zh: "证书无效"),
        "BadCertificateEnvironment": LocalizedText(
            en: "the certificate is for the other environment (sandbox or production)",
            zh: "证书属于另一个环境（开发或生产）"),
        "ExpiredProviderToken": LocalizedText(
            en: "the provider token is stale; a new one is signed",
            zh: "提供方令牌已过期，将重新签发"),
        "Forbidden": LocalizedText(
            en: "the action is not allowed for this credential",
            zh: "此凭据不允许该操作"),
        "InvalidProviderToken": LocalizedText(
            en:
                "the provider token is not valid or its signature cannot be verified: check the Key ID, the Team ID and the key",
            zh: "提供方令牌无效或签名无法验证：请检查 Key ID、Team ID 和密钥"),
        "MissingProviderToken": LocalizedText(
            en: "no certificate was used and no provider token was given",
            zh: "既未使用证书，也未提供提供方令牌"),
        "BadEnvironmentKeyInToken": LocalizedText(
            en: "the key's environment setting does not match the server",
            zh: "密钥的环境设置与服务器不符"),
        "TopicDisallowed": LocalizedText(
            en: "pushing to this topic is not allowed",
            zh: "不允许向此 topic 推送"),
        "BadTopic": LocalizedText(
            en: "the apns-topic is invalid",
            zh: "apns-topic 无效"),
        "DeviceTokenNotForTopic": LocalizedText(
            en: "the device token does not belong to the topic (the app's bundle id)",
            zh: "设备令牌不属于该 topic（应用的 Bundle ID）"),
        "TooManyProviderTokenUpdates": LocalizedText(
            en: "the provider token is being updated too often",
            zh: "提供方令牌更新过于频繁"),
        "BadDeviceToken": LocalizedText(
            en: "the device token is invalid (or of the other environment)",
            zh: "设备令牌无效（或属于另一个环境）"),
        "Unregistered": LocalizedText(
            en: "the device token is no longer active for the topic",
            zh: "设备令牌对该 topic 已不再有效"),
        "ExpiredToken": LocalizedText(
            en: "the device token has expired",
            zh: "设备令牌已过期"),
        "TooManyRequests": LocalizedText(
            en: "too many requests to the same device token",
            zh: "对同一设备令牌的请求过多"),
        "InternalServerError": LocalizedText(
            en: "APNs had an internal error; retried later",
            zh: "APNs 内部错误，稍后重试"),
        "ServiceUnavailable": LocalizedText(
            en: "APNs is unavailable; retried later",
            zh: "APNs 不可用，稍后重试"),
        "Shutdown": LocalizedText(
            en: "the APNs server is shutting down; retried later",
            zh: "APNs 服务器正在关闭，稍后重试"),
    ]
}

extension PushChannel {
    /// This folder's own spelling of its channel (`APNsPushTransport.channel`); internal, so
    /// what imports the transport says `APNsPushTransport.channel`.
    static let apns = APNsPushTransport.channel
}
