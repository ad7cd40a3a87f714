import Foundation
import Logging
import TuisongCore
import TuisongHTTP

/// The native JSON API for devices and tags under `/api/v1`, authenticated by the app's
/// API key (`Authorization: Bearer <api_key>`). Errors: `{"error": {"code", "message"}}`.
struct NativeDeviceAPI: Sendable {
    let store: any Store
    let authenticator: APIKeyAuthenticator
    let logger: Logger

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
        let token = try deviceToken(request)
        let body: DeviceRegistrationBody
        do {
            body = try request.decodeJSON(DeviceRegistrationBody.self)
        } catch {
            throw NativeAPIError(httpError: error)
        }
        guard let environment = APNsEnvironment(rawValue: body.environment) else {
            throw NativeAPIError(
                400, "invalid_environment",
                "environment must be \"sandbox\" or \"production\", got \"\(body.environment)\"")
        }
        if let user = body.user, user.count > 256 {
            throw NativeAPIError(400, "invalid_user", "user must be at most 256 characters")
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
            token: token, environment: environment, user: body.user, locale: body.locale, tags: tags)
        let result = try await store.registerDevice(appID: app.id, registration)
        let deviceTags = try await store.tags(appID: app.id, token: token)
        return .json(DeviceView(result.device, tags: deviceTags), status: result.created ? 201 : 200)
    }

    private func getDevice(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        guard let device = try await store.device(appID: app.id, token: token) else {
            throw NativeAPIError.deviceNotFound(token)
        }
        let tags = try await store.tags(appID: app.id, token: token)
        return .json(DeviceView(device, tags: tags))
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
        return .json(DevicePageView(devices: page.items.map { DeviceView($0, tags: nil) }, nextCursor: page.nextCursor))
    }

    // MARK: helpers

    private func deviceToken(_ request: Request) throws -> DeviceToken {
        let raw = request.pathParameters["token"] ?? ""
        guard let token = DeviceToken(raw) else {
            throw NativeAPIError(
                400, "invalid_token",
                "device token must be hexadecimal, an even number of 64–200 characters")
        }
        return token
    }

    private func tagName(_ raw: String) throws -> TagName {
        guard let tag = TagName(raw) else {
            throw NativeAPIError(
                400, "invalid_tag",
                "tag must be 1–128 characters of letters, digits, _ - . or CJK ideographs")
        }
        return tag
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
    var environment: String
    var user: String?
    var locale: String?
    var tags: [String]?
}

/// A device as the native API shows it.
struct DeviceView: Encodable {
    var id: Int64
    var token: String
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
        environment = device.environment.rawValue
        user = device.user
        locale = device.locale
        self.tags = tags
        createdAt = ISO8601.string(device.createdAt)
        updatedAt = ISO8601.string(device.updatedAt)
        invalidatedAt = device.invalidatedAt.map(ISO8601.string)
        invalidReason = device.invalidReason
    }

    enum CodingKeys: String, CodingKey {
        case id, token, environment, user, locale, tags
        case createdAt = "created_at"
        case updatedAt = "updated_at"
        case invalidatedAt = "invalidated_at"
        case invalidReason = "invalid_reason"
    }

    func encode(to encoder: any Encoder) throws {
        // Absent values are explicit nulls so clients can rely on every key being present.
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(token, forKey: .token)
        try c.encode(environment, forKey: .environment)
        try c.encode(user, forKey: .user)
        try c.encode(locale, forKey: .locale)
        if let tags { try c.encode(tags, forKey: .tags) }
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        try c.encode(invalidatedAt, forKey: .invalidatedAt)
        if invalidatedAt != nil { try c.encode(invalidReason, forKey: .invalidReason) }
    }
}

struct DevicePageView: Encodable {
    var devices: [DeviceView]
    var nextCursor: String?

    enum CodingKeys: String, CodingKey {
        case devices
        case nextCursor = "next_cursor"
    }

    func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(devices, forKey: .devices)
        try c.encode(nextCursor, forKey: .nextCursor)
    }
}

enum ISO8601 {
    /// RFC 3339 with milliseconds, UTC: `2026-11-21T08:00:00.000Z`.
    static func string(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }
}
