import Foundation
import TuisongCore
import TuisongHTTP

/// The device side: what the BPush iOS SDK's calls did, as JSON under `/baidu/device/`.
/// Every call names the app by `apikey` (public, in the app) and the device by its APNs
/// `device_token`, which only the device and its app's servers know.
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
            let token = try Self.token(body)
            switch call {
            case .bind:
                return try await bind(app: app, token: token, body: body)
            case .unbind:
                let device = try await boundDevice(app: app, token: token, body: body)
                guard try await baiduStore.unbindDevice(appID: app.id, channelID: device.channelID) else {
                    throw BaiduError(.bindNotFound, "the device is not bound")
                }
                return [:]
            case .setTags:
                let device = try await boundDevice(app: app, token: token, body: body)
                var details: [JSONValue] = []
                for tag in try Self.tags(body) {
                    _ = try await baiduStore.addTag(appID: app.id, name: tag.value, deviceIDs: [device.id])
                    details.append(["tag": .string(tag.value), "result": 0])
                }
                return ["details": .array(details)]
            case .deleteTags:
                let device = try await boundDevice(app: app, token: token, body: body)
                var details: [JSONValue] = []
                for tag in try Self.tags(body) {
                    let removed = try await baiduStore.removeTag(appID: app.id, name: tag.value, deviceIDs: [device.id])
                    details.append(["tag": .string(tag.value), "result": removed.isEmpty ? 1 : 0])
                }
                return ["details": .array(details)]
            case .listTags:
                let device = try await boundDevice(app: app, token: token, body: body)
                let tags = try await baiduStore.tags(appID: app.id, deviceIDs: [device.id])
                return [
                    "tag_num": .int(Int64(tags.count)),
                    "tags": .array(tags.map { ["tid": .int($0.id), "name": .string($0.name)] }),
                ]
            }
        }
    }

    private func bind(app: App, token: DeviceToken, body: [String: JSONValue]) async throws -> [String: JSONValue] {
        let environment: APNsEnvironment
        switch body["push_mode"]?.stringValue {
        case "development"?: environment = .sandbox
        case "production"?: environment = .production
        case nil: throw BaiduError.missingParameter("push_mode")
        case let other?:
            throw BaiduError.invalidParameter("push_mode", "must be development or production, got \(other)")
        }
        let userID = BaiduIDs.userID(appID: app.id, token: token)
        let channelID = BaiduIDs.channelID(appID: app.id, token: token)
        let (device, created) = try await baiduStore.bindDevice(
            appID: app.id, token: token, environment: environment, userID: userID, channelID: channelID)
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
        guard let token = DeviceToken(raw) else {
            throw BaiduError.invalidParameter("device_token", "must be an APNs token: 64–200 hex digits")
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
