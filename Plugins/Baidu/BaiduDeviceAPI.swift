import Foundation
import TuisongCore
import TuisongHTTP

/// The device side: what the BPush SDKs' calls did, as JSON under `/baidu/device/`.
/// Every call names the app by `apikey` (public, in the app) and the device by its
/// `device_token` (APNs, or on Android its push service's), which only the device and its
/// app's servers know.
enum BaiduDeviceCall: String, CaseIterable, Sendable {
    /// `registerChannel` + `registerDeviceToken` + `bindChannel`.
    case bind
    /// `unbindChannel`: no more pushes and no tag calls until bound again.
    case unbind
    /// `setTag` / `setTags`.
    case setTags = "set_tags"
    /// `delTag` / `delTags`.
    case deleteTags = "del_tags"
    /// `listTags`.
    case listTags = "list_tags"
}

extension BaiduProvider {
    func deviceAPI(_ call: BaiduDeviceCall, _ request: Request) async -> Response {
        let requestID = BaiduReply.newRequestID()
        return await respond(requestID, device: true) {
            let body = try Self.jsonBody(request)
            let app = try await deviceApp(body)
            switch call {
            case .bind:
                // The token is read for the device's service, which the bind decides.
                return try await bind(app: app, body: body)
            case .unbind:
                let token = try Self.token(body)
                let device = try await boundDevice(app: app, token: token, body: body)
                guard try await baiduStore.unbindDevice(appID: app.id, channelID: device.channelID) else {
                    throw BaiduError(.bindNotFound, "the device is not bound")
                }
                return [:]
            case .setTags:
                let token = try Self.token(body)
                let device = try await boundDevice(app: app, token: token, body: body)
                var details: [JSONValue] = []
                for tag in try Self.tags(body) {
                    _ = try await baiduStore.addTag(appID: app.id, name: tag.value, deviceIDs: [device.id])
                    details.append(["tag": .string(tag.value), "result": 0])
                }
                return ["details": .array(details)]
            case .deleteTags:
                let token = try Self.token(body)
                let device = try await boundDevice(app: app, token: token, body: body)
                var details: [JSONValue] = []
                for tag in try Self.tags(body) {
                    let removed = try await baiduStore.removeTag(appID: app.id, name: tag.value, deviceIDs: [device.id])
                    details.append(["tag": .string(tag.value), "result": removed.isEmpty ? 1 : 0])
                }
                return ["details": .array(details)]
            case .listTags:
                let token = try Self.token(body)
                let device = try await boundDevice(app: app, token: token, body: body)
                let tags = try await baiduStore.tags(appID: app.id, deviceIDs: [device.id])
                return [
                    "tag_num": .int(Int64(tags.count)),
                    "tags": .array(tags.map { ["tid": .int($0.id), "name": .string($0.name)] }),
                ]
            }
        }
    }

    /// `device_type` 4 (the default): an iPhone's APNs token, `push_mode` its environment.
    /// `device_type` 3: an Android phone's token of its push service (`androidChannel`).
    private func bind(app: App, body: [String: JSONValue]) async throws -> [String: JSONValue] {
        let deviceType: BaiduDeviceType
        switch body["device_type"] {
        case nil, .null?: deviceType = .iOS
        case let value?:
            guard let number = value.intValue ?? value.stringValue.flatMap({ Int64($0) }),
                let type = BaiduDeviceType(rawValue: Int(clamping: number))
            else { throw BaiduError.invalidParameter("device_type", "must be 3 (Android) or 4 (iOS)") }
            deviceType = type
        }
        let channel: PushChannel
        let environment: PushEnvironment
        switch deviceType {
        case .android:
            channel = try await androidChannel(app: app, body: body)
            environment = .production
        case .iOS:
            channel = .apns
            switch body["push_mode"]?.stringValue {
            case "development"?: environment = .sandbox
            case "production"?: environment = .production
            case nil: throw BaiduError.missingParameter("push_mode")
            case let other?:
                throw BaiduError.invalidParameter("push_mode", "must be development or production, got \(other)")
            }
        }
        guard let raw = body["device_token"]?.stringValue, !raw.isEmpty else {
            throw BaiduError.missingParameter("device_token")
        }
        guard let token = DeviceToken(raw, channel: channel) else {
            throw BaiduError.invalidParameter(
                "device_token",
                channel == .apns
                    ? "must be an APNs token: 64–200 hex digits"
                    : "must be a \(channel) token: 1–4096 letters, digits or -_.:~ (not APNs hex)")
        }
        let userID = BaiduIDs.userID(appID: app.id, token: token)
        let channelID = BaiduIDs.channelID(appID: app.id, token: token)
        let (device, created) = try await baiduStore.bindDevice(
            appID: app.id, token: token, environment: environment, userID: userID, channelID: channelID,
            channel: channel)
        if created {
            logger.debug(
                "baidu: bound a channel",
                metadata: ["app": "\(app.id)", "channel_id": "\(channelID)", "device": "\(device.id)"])
        }
        return [
            "app_id": .string(app.vendorSettings[BaiduKeys.vendor]?["app_id"] ?? String(app.id)),
            "user_id": .string(userID),
            "channel_id": .string(channelID),
        ]
    }

    /// The push service of an Android device: the bind's own `channel` (what the app found on
    /// the phone: Huawei's Push Kit on a Huawei, …), else the app's `android_channel` setting,
    /// else the service of the app's Android credentials when they are all of one; 30602 when
    /// none of these names one.
    private func androidChannel(app: App, body: [String: JSONValue]) async throws -> PushChannel {
        if let value = body["channel"], !value.isNull {
            guard let name = value.stringValue, let channel = PushChannel.declared(name),
                BaiduKeys.androidChannels.contains(channel)
            else {
                throw BaiduError.invalidParameter(
                    "channel", "must be \(PushChannel.list(BaiduKeys.androidChannels, \.rawValue, "or"))")
            }
            return channel
        }
        if let name = app.vendorSettings[BaiduKeys.vendor]?[BaiduKeys.androidChannel],
            let channel = PushChannel.declared(name), BaiduKeys.androidChannels.contains(channel)
        {
            return channel
        }
        let services = Set(try await store.channelCredentials(appID: app.id).map(\.channel).filter(\.isAndroid))
        if services.count == 1, let only = services.first { return only }
        throw BaiduError.invalidParameter(
            "channel",
            services.isEmpty
                ? "is required for device_type 3: the app has no android_channel setting and no Android credential"
                : "is required for device_type 3: the app has credentials for \(services.map(\.rawValue).sorted().joined(separator: ", ")) and no android_channel setting"
        )
    }

    private func deviceApp(_ body: [String: JSONValue]) async throws -> App {
        guard let apiKey = body["apikey"]?.stringValue, !apiKey.isEmpty else {
            throw BaiduError.missingParameter("apikey")
        }
        guard let app = try await baiduStore.app(apiKey: apiKey) else {
            throw BaiduError(.authenticationFailed, "unknown apikey \(apiKey)")
        }
        return app
    }

    /// The device of `device_token` if it is bound (and is `channel_id`, when that is given).
    private func boundDevice(app: App, token: DeviceToken, body: [String: JSONValue]) async throws -> BaiduDevice {
        guard let device = try await baiduStore.device(appID: app.id, token: token) else {
            throw BaiduError(.bindNotFound, "the device is not bound; call bind first")
        }
        if let channelID = body["channel_id"]?.stringValue, channelID != device.channelID {
            throw BaiduError(.bindNotFound, "the device is not bound to channel \(channelID)")
        }
        return device
    }

    private static func jsonBody(_ request: Request) throws(BaiduError) -> [String: JSONValue] {
        guard !request.body.isEmpty else { throw BaiduError(.invalidParameters, "the body must be a JSON object") }
        do {
            guard case .object(let members) = try JSONValue(parsing: request.body) else {
                throw BaiduError(.invalidParameters, "the body must be a JSON object")
            }
            return members
        } catch let error as BaiduError {
            throw error
        } catch {
            throw BaiduError(.invalidParameters, "the body is not JSON: \(error)")
        }
    }

    private static func token(_ body: [String: JSONValue]) throws(BaiduError) -> DeviceToken {
        guard let raw = body["device_token"]?.stringValue, !raw.isEmpty else {
            throw BaiduError.missingParameter("device_token")
        }
        // Any bound device's token: an APNs token, or an Android service's.
        guard let token = DeviceToken(addressing: raw) else {
            throw BaiduError.invalidParameter(
                "device_token", "must be an APNs token (64–200 hex digits) or an Android push service's")
        }
        return token
    }

    /// `tag` (one) or `tags` (an array), all validated before anything changes.
    private static func tags(_ body: [String: JSONValue]) throws(BaiduError) -> [TagName] {
        var raw: [JSONValue] = []
        if let tag = body["tag"] { raw.append(tag) }
        if let tags = body["tags"] {
            guard let array = tags.arrayValue else { throw BaiduError.invalidParameter("tags", "must be an array") }
            raw += array
        }
        guard !raw.isEmpty else { throw BaiduError.missingParameter("tags") }
        guard raw.count <= 100 else { throw BaiduError.invalidParameter("tags", "must hold at most 100 tags") }
        var tags: [TagName] = []
        for value in raw {
            guard let text = value.stringValue else { throw BaiduError.invalidParameter("tags", "must hold strings") }
            let tag = try BaiduParameters.tagName(text, parameter: "tag")
            if !tags.contains(tag) { tags.append(tag) }
        }
        return tags
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
