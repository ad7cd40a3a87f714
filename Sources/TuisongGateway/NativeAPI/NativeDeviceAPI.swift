import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin

/// The native JSON API for devices and tags under `/api/v1`, authenticated by the app's
/// API key (`Authorization: Bearer <api_key>`). Errors: `{"error": {"code", "message"}}`.
struct NativeDeviceAPI: Sendable {
    let store: any Store
    let authenticator: APIKeyAuthenticator
    let logger: Logger
    /// The gateway's transports (its config's registry): the channels a device may name.
    var channels: [PushChannel] = PushChannel.allCases
    /// The mounted vendor providers: a registration may carry their `deviceFields`, and each
    /// adds its fields to the answer (`PushProvider.deviceRegistered`).
    var providers: [any PushProvider] = []

    func register(on router: Router) {
        router.add(.PUT, "/api/v1/devices/{token}", bodyLimit: 64 << 10) { request in
            await authenticator.withApp(request) { app in try await putDevice(app, request) }
        }
        router.add(.GET, "/api/v1/devices/{token}") { request in
            await authenticator.withApp(request) { app in try await getDevice(app, request) }
        }
        router.add(.DELETE, "/api/v1/devices/{token}") { request in
            await authenticator.withApp(request) { app in try await deleteDevice(app, request) }
        }
        router.add(.GET, "/api/v1/devices/{token}/tags") { request in
            await authenticator.withApp(request) { app in try await listTags(app, request) }
        }
        router.add(.PUT, "/api/v1/devices/{token}/tags/{tag}") { request in
            await authenticator.withApp(request) { app in try await putTag(app, request) }
        }
        router.add(.DELETE, "/api/v1/devices/{token}/tags/{tag}") { request in
            await authenticator.withApp(request) { app in try await deleteTag(app, request) }
        }
        router.add(.GET, "/api/v1/tags/{tag}/devices") { request in
            await authenticator.withApp(request) { app in try await devicesWithTag(app, request) }
        }
    }

    /// `PUT /api/v1/devices/{token}` — register or update. 201 when new, 200 when it existed.
    private func putDevice(_ app: App, _ request: Request) async throws -> Response {
        let body: DeviceRegistrationBody
        do {
            body = try request.decodeJSON(DeviceRegistrationBody.self)
        } catch {
            throw NativeAPIError(httpError: error)
        }
        let providerKeys = Set(providers.flatMap { type(of: $0).deviceFields })
        if let unknown = body.unknownFields.first(where: { !providerKeys.contains($0) }) {
            let vendorKeys = providerKeys.sorted().map { ", \($0)" }.joined()
            throw NativeAPIError(
                400, "invalid_request",
                "unknown field \"\(unknown)\"; a device takes channel, environment, user, locale, tags\(vendorKeys)")
        }
        // Fields left out keep their stored value, channel and environment included: read the
        // device only when one of them is missing and cannot be told from the token itself (a
        // token the bare-token channel takes, `ChannelCatalog.bareTokenChannel`, by its shape,
        // is never another channel's).
        let rawToken = request.pathParameters["token"] ?? ""
        var stored: Device?
        let channelUnknown = body.channel == nil && PushChannel.takingBareToken(rawToken) == nil
        if channelUnknown || body.environment == nil {
            if let existing = DeviceToken(addressing: rawToken) {
                stored = try await store.device(appID: app.id, token: existing)
            }
        }
        let channel =
            try body.channel.map { try Self.channel($0, among: channels) } ?? stored?.channel
            ?? Self.defaultChannel(among: channels)
        let token = try deviceToken(request, channel: channel, channelGiven: body.channel != nil)
        let environment = try DeviceRules.native {
            try DeviceRules.environment(body.environment, channel: channel, stored: stored)
        }
        if let user = body.user, user.count > 256 || user.isEmpty {
            throw NativeAPIError(
                400, "invalid_user", "user must be 1–256 characters; send \"user\": null to detach the device's user")
        }
        if let locale = body.locale, locale.count > 35 || locale.isEmpty {
            throw NativeAPIError(400, "invalid_locale", "locale must be 1–35 characters (a BCP 47 tag)")
        }
        var tags: [TagName]?
        if let rawTags = body.tags {
            guard rawTags.count <= 1000 else {
                throw NativeAPIError(400, "too_many_tags", "at most 1000 tags per device")
            }
            tags = try rawTags.map(tagName)
        }
        let registration = DeviceRegistration(
            token: token, environment: environment,
            user: body.detachesUser ? DeviceRegistration.noUser : body.user, locale: body.locale, tags: tags,
            channel: channel)
        let result = try await store.registerDevice(appID: app.id, registration)
        // The tags just written, or (tags not given) what the device already had.
        let deviceTags: [String]
        if let tags {
            deviceTags = Set(tags.map(\.value)).sorted()
        } else {
            // One statement on this thread, not another trip through the reader pool.
            deviceTags = try await store.deviceWithTags(appID: app.id, token: token)?.tags ?? []
        }
        var answer = DeviceView(result.device, tags: deviceTags).json
        for provider in providers {
            let keys = type(of: provider).deviceFields
            let fields = body.otherFields.filter { keys.contains($0.key) }
            let added: [String: JSONValue]
            do {
                added = try await provider.deviceRegistered(app: app, device: result.device, fields: fields)
            } catch let error as ProviderFieldError {
                throw NativeAPIError(error.status, error.code, error.message)
            }
            if case .object(var members) = answer {
                members.merge(added) { own, _ in own }
                answer = .object(members)
            }
        }
        return jsonResponse(answer, status: result.created ? 201 : 200)
    }

    private func getDevice(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        guard let (device, tags) = try await store.deviceWithTags(appID: app.id, token: token) else {
            throw NativeAPIError.deviceNotFound(token)
        }
        return DeviceView(device, tags: tags).response()
    }

    private func deleteDevice(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        guard try await store.deleteDevice(appID: app.id, token: token) else {
            throw NativeAPIError.deviceNotFound(token)
        }
        return .empty(status: 204)
    }

    private func listTags(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        let tags = try await mapNotFound(token) { try await store.tags(appID: app.id, token: token) }
        return .json(["tags": tags])
    }

    private func putTag(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        let tag = try tagName(request.pathParameters["tag"] ?? "")
        try await mapNotFound(token) { try await store.addTag(appID: app.id, token: token, tag: tag) }
        return .empty(status: 204)
    }

    private func deleteTag(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        let tag = try tagName(request.pathParameters["tag"] ?? "")
        let removed = try await mapNotFound(token) {
            try await store.removeTag(appID: app.id, token: token, tag: tag)
        }
        guard removed else {
            throw NativeAPIError(404, "tag_not_found", "the device does not have tag \"\(tag)\"")
        }
        return .empty(status: 204)
    }

    private func devicesWithTag(_ app: App, _ request: Request) async throws -> Response {
        let tag = try tagName(request.pathParameters["tag"] ?? "")
        var limit = 100
        if let raw = request.query["limit"] {
            guard let value = Int(raw), (1...1000).contains(value) else {
                throw NativeAPIError(400, "invalid_limit", "limit must be an integer 1–1000, got \"\(raw)\"")
            }
            limit = value
        }
        let cursor = request.query["cursor"].flatMap { $0.isEmpty ? nil : $0 }
        let page: Page<Device>
        do {
            page = try await store.devices(appID: app.id, tag: tag, cursor: cursor, limit: limit)
        } catch let error as StoreError where error.code == .invalidCursor {
            throw NativeAPIError(400, "invalid_cursor", "cursor is not one this API returned")
        }
        let devices = JSONValue.array(page.items.map { DeviceView($0, tags: nil).json })
        return jsonResponse(
            .object(["devices": devices, "next_cursor": page.nextCursor.map(JSONValue.string) ?? .null]))
    }

    // MARK: helpers

    /// The token of an existing device, whatever its channel.
    private func deviceToken(_ request: Request) throws -> DeviceToken {
        let raw = request.pathParameters["token"] ?? ""
        guard let token = DeviceToken(addressing: raw) else {
            let bare = ChannelCatalog.shared.bareTokenChannel
            let bareToken = bare.map { "\($0.withArticle) token (\($0.tokenRule.requirement)) or " } ?? ""
            throw NativeAPIError(
                400, "invalid_token",
                "device token must be \(bareToken)an Android service's token (\(DeviceToken.Rule.opaqueRequirement))")
        }
        return token
    }

    /// The token of a device being registered on `channel`. When the channel was left out (the
    /// bare-token channel by default) and the token is an Android one, the message says how to
    /// name it.
    private func deviceToken(_ request: Request, channel: PushChannel, channelGiven: Bool) throws -> DeviceToken {
        let raw = request.pathParameters["token"] ?? ""
        return try DeviceRules.native {
            try DeviceRules.token(
                raw, channel: channel, hint: channelGiven ? nil : { "add \"channel\": \"\($0.rawValue)\"" })
        }
    }

    static func channel(_ name: String?, among channels: [PushChannel]) throws -> PushChannel {
        guard let name else { return try defaultChannel(among: channels) }
        return try DeviceRules.native { try DeviceRules.channel(name, among: channels) }
    }

    /// The channel of a device registered with none named: the one that takes bare tokens
    /// (`ChannelCatalog.bareTokenChannel`).
    static func defaultChannel(among channels: [PushChannel]) throws -> PushChannel {
        guard let channel = ChannelCatalog.shared.bareTokenChannel?.channel else {
            throw NativeAPIError(
                400, "invalid_channel",
                "channel is required: \(PushChannel.list(channels, \.rawValue, "or"))")
        }
        return channel
    }

    private func tagName(_ raw: String) throws -> TagName {
        try DeviceRules.native { try DeviceRules.tag(raw) }
    }

    private func mapNotFound<T>(_ token: DeviceToken, _ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreError where error.code == .notFound {
            throw NativeAPIError.deviceNotFound(token)
        }
    }
}

/// The JSON body of `PUT /api/v1/devices/{token}`.
struct DeviceRegistrationBody: Decodable {
    /// Required for a new device of an Apple-style channel; Android devices have none
    /// (`production` if given).
    var environment: String?
    /// A declared channel's name; a new device's default is the bare-token channel.
    var channel: String?
    var user: String?
    /// `"user": null`: the device's user is detached (absent leaves it as it is).
    var detachesUser = false
    var locale: String?
    var tags: [String]?
    /// Keys the body has that a device does not (`"tag"` for `"tags"`): refused, as `/push`
    /// refuses them, rather than silently dropped.
    var unknownFields: [String] = []
    /// Those keys' values: a vendor provider's device fields (`PushProvider.deviceFields`).
    var otherFields: [String: JSONValue] = [:]

    private enum CodingKeys: String, CodingKey, CaseIterable {
        case environment, channel, user, locale, tags
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        environment = try container.decodeIfPresent(String.self, forKey: .environment)
        channel = try container.decodeIfPresent(String.self, forKey: .channel)
        user = try container.decodeIfPresent(String.self, forKey: .user)
        detachesUser = try container.contains(.user) && container.decodeNil(forKey: .user)
        locale = try container.decodeIfPresent(String.self, forKey: .locale)
        tags = try container.decodeIfPresent([String].self, forKey: .tags)
        let known = Set(CodingKeys.allCases.map(\.rawValue))
        let all = try decoder.container(keyedBy: AnyKey.self)
        unknownFields = all.allKeys.map(\.stringValue).filter { !known.contains($0) }.sorted()
        for key in unknownFields {
            otherFields[key] = try all.decode(JSONValue.self, forKey: AnyKey(stringValue: key))
        }
    }
}

/// A device as the native API shows it.
struct DeviceView {
    var id: Int64
    var token: String
    var channel: String
    var environment: String
    var user: String?
    var locale: String?
    var tags: [String]?
    var createdAt: String
    var updatedAt: String
    var invalidatedAt: String?
    var invalidReason: String?

    init(_ device: Device, tags: [String]?) {
        id = device.id
        token = device.token
        channel = device.channel.rawValue
        environment = device.environment.rawValue
        user = device.user
        locale = device.locale
        self.tags = tags
        createdAt = ISO8601.string(device.createdAt)
        updatedAt = ISO8601.string(device.updatedAt)
        invalidatedAt = device.invalidatedAt.map(ISO8601.string)
        invalidReason = device.invalidReason
    }

    var json: JSONValue {
        var object: [String: JSONValue] = [
            "id": .int(id), "token": .string(token), "channel": .string(channel), "environment": .string(environment),
            "user": user.map(JSONValue.string) ?? .null, "locale": locale.map(JSONValue.string) ?? .null,
            "created_at": .string(createdAt), "updated_at": .string(updatedAt),
            "invalidated_at": invalidatedAt.map(JSONValue.string) ?? .null,
        ]
        if let tags { object["tags"] = .array(tags.map(JSONValue.string)) }
        if invalidatedAt != nil { object["invalid_reason"] = invalidReason.map(JSONValue.string) ?? .null }
        return .object(object)
    }

    func response(status: Int = 200) -> Response { jsonResponse(json, status: status) }

}

/// Deterministic JSON through `JSONValue`, cheaper than JSONEncoder on the hot device paths.
func jsonResponse(_ value: JSONValue, status: Int = 200) -> Response {
    var headers = HTTPHeaders()
    headers.add(name: "Content-Type", value: "application/json; charset=utf-8")
    return Response(status: status, headers: headers, body: value.serialized())
}

enum ISO8601 {
    /// RFC 3339 with milliseconds, UTC: `2026-11-21T08:00:00.000Z`. Written by hand: the
    /// Foundation format style costs microseconds per call, and every device view has three.
    static func string(_ date: Date) -> String {
        let milliseconds = SQLTime.milliseconds(date)
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
        }
        let ms = Int32(((milliseconds % 1000) + 1000) % 1000)
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(ms, 3))Z"
    }
}

/// What a device registration must be, wherever it comes from: the native API's
/// `PUT /api/v1/devices/{token}` and `tuisong device import` take the same tokens, channels,
/// environments and tags, and refuse the rest in the same words (each in its own dialect).
public enum DeviceRules {
    /// A refused field: the native API's error code and one sentence.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public let code: String
        public let message: String
        public var description: String { message }
    }

    /// " (<name>)": the name of the channel that takes bare tokens (`ChannelCatalog.bareTokenChannel`),
    /// whose hex tokens an error message describes; empty when no channel takes them.
    public static var hexTokensChannel: String {
        ChannelCatalog.shared.bareTokenChannel.map { " (\($0.displayName))" } ?? ""
    }

    /// A channel by its name, among the declared ones (or `channels`: a
    /// gateway's registry).
    public static func channel(_ name: String, among channels: [PushChannel]? = nil) throws(Refusal) -> PushChannel {
        let channels = channels ?? PushChannel.allCases
        guard let channel = PushChannel(rawValue: name), channels.contains(channel) else {
            let known = channels.map { "\"\($0.rawValue)\"" }.joined(separator: ", ")
            throw Refusal(code: "invalid_channel", message: "channel must be one of \(known), got \"\(name)\"")
        }
        return channel
    }

    /// A device's environment, of any channel: `sandbox` marks a test phone, whose pushes a
    /// sandbox push reaches and a production push skips. An existing device (`stored`) keeps
    /// its own when it is left out; a new device of an Apple-style channel needs one (its token is
    /// valid at one endpoint only), a new Android-style device is `production` unless it says so.
    public static func environment(_ name: String?, channel: PushChannel, stored: Device?) throws(Refusal)
        -> PushEnvironment
    {
        if let name {
            guard let parsed = PushEnvironment(rawValue: name) else {
                throw Refusal(
                    code: "invalid_environment",
                    message: "environment must be \"sandbox\" or \"production\", got \"\(name)\"")
            }
            return parsed
        }
        // A token moves between channels (an Android token registered again with another
        // service) keeping its environment; a bare-token channel's tokens are never another's.
        if let stored { return stored.environment }
        if channel.isAndroid { return .production }
        throw Refusal(
            code: "invalid_environment", message: "environment is required for a new \(channel.displayName) device")
    }

    /// A token of `channel`, by its declared rule. `hint`, when the channel was left out (the
    /// bare-token channel by default), is how the caller names a channel, given one to name (the
    /// first declared Android-style channel): a token of that channel's shape is refused with it.
    public static func token(
        _ raw: String, channel: PushChannel, hint: ((PushChannel) -> String)? = nil
    ) throws(Refusal) -> DeviceToken {
        guard let token = DeviceToken(raw, channel: channel) else {
            let declaration = channel.declaration
            var message = "\(declaration.withArticle) device token must be \(declaration.tokenRule.requirement)"
            if !declaration.takesBareTokens, let bare = ChannelCatalog.shared.bareTokenChannel {
                message += ", and not \(bare.withArticle) token"
            }
            if declaration.takesBareTokens, let hint, let example = PushChannel.android.first,
                DeviceToken(raw, channel: example) != nil
            {
                message += "; if this is \(example.withArticle) token, \(hint(example)) (or the Android service's name)"
            }
            throw Refusal(code: "invalid_token", message: message)
        }
        return token
    }

    /// A tag's name.
    public static func tag(_ raw: String) throws(Refusal) -> TagName {
        guard let tag = TagName(raw) else {
            throw Refusal(
                code: "invalid_tag", message: "tag must be \(TagName.rule)"
            )
        }
        return tag
    }

    /// `body`'s refusal as the native API's 400.
    static func native<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let refusal as Refusal {
            throw NativeAPIError(400, refusal.code, refusal.message)
        }
    }
}
