import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin

/// Baidu Cloud Push (百度云推送) for iOS and Android, at Baidu's own paths so app servers written against
/// Baidu's SDKs only change their host:
///
/// - `/rest/2.0/channel/{channel|<channel_id>}`: Channel REST API 2.0 (`push_msg`, tags,
///   bindings, kept messages), form-encoded, `method` naming the call.
/// - `/rest/3.0/{class}/{method}`: REST API 3.0 (push, report, app, tag, timer, topic).
/// - `/baidu/device/*`: what the BPush iOS SDK did (bind, unbind, tags), as JSON, for apps
///   that registered through Baidu's SDK.
///
/// Server calls authenticate with Baidu's MD5 signature under the app's apikey and secret
/// key (`BaiduKeys`); every answer is in Baidu's format (`BaiduReply`, `BaiduError`).
public struct BaiduProvider: PushProvider {
    public static let name = "baidu"

    let context: ProviderContext
    let configuration: BaiduConfiguration
    /// Baidu's bindings, tags, kept messages and lookups, on the shared database.
    let baiduStore: BaiduStore
    let authenticator: BaiduAuthenticator
    let pusher: BaiduPusher

    public init(context: ProviderContext) throws {
        self.context = context
        configuration = try BaiduConfiguration(context.configuration)
        baiduStore = BaiduStore(database: context.database, store: context.store, clock: context.clock)
        authenticator = BaiduAuthenticator(
            baiduStore: baiduStore, secrets: context.secrets, clock: context.clock,
            limiter: RateLimiter(
                rate: configuration.requestsPerSecond, burst: configuration.burst, clock: context.clock,
                share: context.nodeShare),
            window: configuration.signatureWindow, logger: context.logger)
        pusher = BaiduPusher(baiduStore: baiduStore, gateway: context.gateway, clock: context.clock)
    }

    /// Keeps each push to its `device_type`'s devices.
    public var deliveryPolicy: (any DeliveryPolicy)? { BaiduDeliveryPolicy() }

    public static let displayName = LocalizedText(en: "Baidu Cloud Push", zh: "百度云推送")

    /// An app's Baidu keys (`BaiduKeys` reads and checks them by these declarations): the
    /// console's form, `tuisong app set-baidu --apikey … --secret-env VAR [--baidu-app-id …]`
    /// and the admin API all follow them.
    /// Computed on each read: the Android services are the ones declared when it is read.
    public static var settings: [VendorSetting] {
        [
            VendorSetting(
                key: "apikey", label: LocalizedText(en: "API key (apikey)", zh: "API Key（apikey）"),
                isUniqueAcrossApps: true, maxLength: 64,
                problem: { BaiduKeys.isValidAPIKey($0) ? nil : "must be 1–64 letters, digits, - or _" }),
            VendorSetting(
                key: "secret_key", label: LocalizedText(en: "Secret key", zh: "Secret Key"), isSecret: true,
                cliFlag: "secret", maxLength: 256,
                problem: { value in
                    value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
                        ? nil : "must be printable ASCII characters without spaces"
                }),
            VendorSetting(
                key: "app_id", label: LocalizedText(en: "Baidu app id", zh: "百度 AppID"), isRequired: false,
                cliFlag: "baidu-app-id", maxLength: 20,
                problem: { BaiduParameters.isPlainID($0) ? nil : "must be digits (Baidu's numeric app id)" }),
            VendorSetting(
                key: BaiduKeys.androidChannel,
                label: LocalizedText(
                    en: "Android push service (\(PushChannel.list(BaiduKeys.androidChannels, \.rawValue, "or")))",
                    zh: "Android 推送通道（\(BaiduKeys.androidChannels.map(\.rawValue).joined(separator: "、"))）"),
                isRequired: false, maxLength: 16,
                problem: { value in
                    PushChannel.declared(value).map(BaiduKeys.androidChannels.contains) == true
                        ? nil : "must be \(PushChannel.list(BaiduKeys.androidChannels, \.rawValue, "or"))"
                }),
        ]
    }

    /// Devices bound through Baidu show their ids in the console.
    public static let deviceColumns = [
        DeviceColumn(key: "channel_id", label: LocalizedText(en: "Baidu channel_id", zh: "百度 channel_id")),
        DeviceColumn(key: "user_id", label: LocalizedText(en: "Baidu user_id", zh: "百度 user_id")),
    ]

    public func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        try await baiduStore.bindings(appID: appID, deviceIDs: deviceIDs)
    }

    /// Baidu's first tables came with the core migration `v3-baidu-bindings-tags-kept-messages`
    /// (see `BaiduStore`); what changed since is here.
    public static let migrations = [
        // Unbinding deletes a channel's kept messages: find them without scanning the user's.
        // On PostgreSQL, whose history starts after the core v3 migration, this first step also
        // creates what v3 made for Baidu on SQLite: the kept messages, the binding events and the
        // indexes on JSON paths, spelled as `SQLDialect.jsonText` spells the lookups. Tag creation
        // times are the PostgreSQL core schema's own.
        PluginMigration(
            "1-kept-messages-by-channel",
            sql: "CREATE INDEX baidu_kept_by_channel ON baidu_kept_messages(app_id, channel_id)",
            postgres: .sql(
                """
                CREATE UNIQUE INDEX apps_by_baidu_apikey ON apps ((vendor_settings::jsonb #>> '{baidu,apikey}'));
                CREATE INDEX messages_by_baidu_timer ON messages (app_id, (labels::jsonb #>> '{timer_id}'))
                    WHERE vendor = 'baidu';
                CREATE INDEX messages_by_baidu_topic ON messages (app_id, (labels::jsonb #>> '{topic_id}'))
                    WHERE vendor = 'baidu';
                CREATE TABLE baidu_kept_messages (
                    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                    app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    msg_id TEXT NOT NULL,
                    user_id TEXT NOT NULL,
                    channel_id TEXT NOT NULL,
                    msg_key TEXT,
                    message TEXT NOT NULL,
                    message_type BIGINT NOT NULL CHECK (message_type IN (0, 1)),
                    expires_at BIGINT NOT NULL,
                    created_at BIGINT NOT NULL
                );
                CREATE INDEX baidu_kept_by_user ON baidu_kept_messages(app_id, user_id, id);
                CREATE INDEX baidu_kept_by_msg ON baidu_kept_messages(app_id, msg_id);
                CREATE INDEX baidu_kept_by_expiry ON baidu_kept_messages(expires_at);
                CREATE INDEX baidu_kept_by_channel ON baidu_kept_messages(app_id, channel_id);
                CREATE TABLE baidu_binding_events (
                    id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
                    app_id BIGINT NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    kind TEXT NOT NULL CHECK (kind IN ('bind', 'unbind')),
                    at BIGINT NOT NULL
                );
                CREATE INDEX baidu_binding_events_by_app ON baidu_binding_events(app_id, at)
                """)),
        // A device's Baidu ids, in Baidu's own table: a channel is one device of one app; the
        // binding goes when the device does.
        PluginMigration(
            "2-bindings",
            sql: """
                CREATE TABLE baidu_bindings (
                    device_id INTEGER PRIMARY KEY REFERENCES devices(id) ON DELETE CASCADE,
                    app_id INTEGER NOT NULL REFERENCES apps(id) ON DELETE CASCADE,
                    user_id TEXT,
                    channel_id TEXT NOT NULL,
                    UNIQUE (app_id, channel_id)
                ) STRICT;
                CREATE INDEX baidu_bindings_by_user ON baidu_bindings(app_id, user_id) WHERE user_id IS NOT NULL;
                """),
        // The bindings kept in the core's `devices.baidu_user_id`/`baidu_channel_id` (v1 to v7)
        // move here before the core drops those columns. A device was bound when it had a
        // channel (every query asked for one; a bind wrote both ids at once).
        PluginMigration(
            "3-bindings-from-core-devices", before: "v8-vendor-columns-leave-the-core",
            sql: """
                INSERT INTO baidu_bindings (device_id, app_id, user_id, channel_id)
                SELECT id, app_id, baidu_user_id, baidu_channel_id FROM devices WHERE baidu_channel_id IS NOT NULL
                """,
            // PostgreSQL's devices never had those columns.
            postgres: .skip),
    ]

    public func register(on router: Router) {
        // Everything under Baidu's two roots is Baidu's, errors (404, 405, 413) included.
        router.addGroup(
            name: Self.name, claims: { $0.hasPrefix("/rest/") || $0.hasPrefix("/baidu/") },
            errorResponder: BaiduReply.errorResponder
        ) { group in
            for method in [HTTPMethod.GET, .POST] {
                group.add(method, "/rest/2.0/channel/{channel}") { request in await channelAPI(request) }
                group.add(method, "/rest/3.0/{class}/{method}") { request in await restAPI(request) }
            }
            for call in BaiduDeviceCall.allCases {
                group.add(.POST, "/baidu/device/\(call.rawValue)") { request in await deviceAPI(call, request) }
            }
        }
    }

    var store: any ProviderStore { context.store }
    var gateway: any PushGateway { context.gateway }
    var clock: any TuisongCore.Clock { context.clock }
    var logger: Logger { context.logger }

    /// Runs a call and renders its outcome; anything but a `BaiduError` is logged and answered
    /// as 30600 without its details.
    func respond(
        _ requestID: Int64, device: Bool = false, _ body: () async throws -> [String: JSONValue]
    ) async -> Response {
        do {
            let parameters = try await body()
            return device
                ? BaiduReply.deviceSuccess(requestID, parameters) : BaiduReply.success(requestID, parameters)
        } catch let error as BaiduError {
            return BaiduReply.failure(requestID, error)
        } catch let error as BacklogFull {
            var response = BaiduReply.failure(requestID, .backlogFull(error))
            response.headers.add(name: "Retry-After", value: String(error.retryAfterSeconds))
            return response
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning(
                "baidu: store unavailable", metadata: ["baidu_request_id": "\(requestID)", "error": "\(error)"])
            var response = BaiduReply.failure(requestID, .storeUnavailable(error))
            response.headers.add(name: "Retry-After", value: String((error.unavailability ?? .busy).retryAfterSeconds))
            return response
        } catch {
            logger.error("baidu: request failed", metadata: ["baidu_request_id": "\(requestID)", "error": "\(error)"])
            return BaiduReply.failure(
                requestID, BaiduError(.internalError, "see the gateway log, request \(requestID)"))
        }
    }

    // MARK: Shared lookups

    /// The bound device of `channelID`, or 30608.
    func device(app: App, channelID: String, parameter: String = "channel_id") async throws -> BaiduDevice {
        guard BaiduParameters.isPlainID(channelID) else {
            throw BaiduError.invalidParameter(parameter, "must be a channel id (digits)")
        }
        guard let device = try await baiduStore.device(appID: app.id, channelID: channelID) else {
            throw BaiduError(.bindNotFound, "no device is bound to channel \(channelID)")
        }
        return device
    }

    /// The devices bound to `userID` (only `channelID` when given), or 30608.
    func devices(app: App, userID: String, channelID: String? = nil) async throws -> [BaiduDevice] {
        guard BaiduParameters.isPlainID(userID) else {
            throw BaiduError.invalidParameter("user_id", "must be a user id (digits)")
        }
        var devices = try await baiduStore.devices(appID: app.id, userID: userID)
        if let channelID { devices = devices.filter { $0.channelID == channelID } }
        guard !devices.isEmpty else {
            if let channelID {
                throw BaiduError(.bindNotFound, "user \(userID) is not bound on channel \(channelID)")
            }
            throw BaiduError(.bindNotFound, "no device is bound to user \(userID)")
        }
        return devices
    }

    /// The app tag `name`, or 30611.
    func existingTag(app: App, _ name: TagName) async throws -> BaiduTag {
        guard let tag = try await baiduStore.tag(appID: app.id, name: name.value) else {
            throw BaiduError(.tagNotFound, "tag \(name.value) does not exist")
        }
        return tag
    }

    /// `deploy_status`: 1 development (APNs sandbox), 2 production (the default).
    static func environment(_ parameters: BaiduParameters) throws(BaiduError) -> PushEnvironment {
        try parameters.integer("deploy_status", default: 2, in: 1...2) == 1 ? .sandbox : .production
    }

    /// The devices of a push to named devices that are of its `device_type`, or 30608 when
    /// none is (a channel id of the other type).
    static func ofType(_ type: BaiduDeviceType, _ devices: [BaiduDevice], naming what: String) throws(BaiduError)
        -> [BaiduDevice]
    {
        let matching = devices.filter { type.matches($0.channel) }
        guard !matching.isEmpty else {
            throw BaiduError(.bindNotFound, "\(what) has no device of device_type \(type.rawValue)")
        }
        return matching
    }

    /// `topic_id`: 1–128 letters, digits and `_`.
    static func topicID(_ parameters: BaiduParameters, required: Bool) throws(BaiduError) -> String? {
        guard let topic = parameters["topic_id"] else {
            if required { throw BaiduError.missingParameter("topic_id") }
            return nil
        }
        guard topic.utf8.count <= 128,
            topic.utf8.allSatisfy({ byte in
                byte == UInt8(ascii: "_") || (48...57).contains(byte) || (65...90).contains(byte)
                    || (97...122).contains(byte)
            })
        else {
            throw BaiduError.invalidParameter("topic_id", "must be 1–128 letters, digits or _")
        }
        return topic
    }

    /// Baidu's `status` of a message: 0 sent, 1 waiting, 2 sending, 3 failed.
    static func baiduStatus(_ status: MessageStatus) -> Int64 {
        switch status.record.state {
        case .scheduled, .queued: return 1
        case .sending: return 2
        case .cancelled: return 3
        case .completed:
            let counts = status.counts
            if counts.queued > 0 || counts.sending > 0 { return 2 }
            if counts.delivered == 0 && counts.failed > 0 { return 3 }
            return 0
        }
    }

    /// When a message was (or will be) sent.
    static func sendTime(_ record: MessageRecord) -> JSONValue {
        .seconds(record.startedAt ?? record.sendAt ?? record.createdAt)
    }
}
