import Foundation
import TuisongCore
import TuisongHTTP

/// Devices and tags of an app: search by token prefix, user (or IM account) or tag, page by
/// page; one device in detail with its tags and its last delivery.
struct AdminDevicesAPI: Sendable {
    let api: AdminAPI

    var store: any AdminStore { api.store }
    /// How many of the app's newest messages the detail view looks through for the device's
    /// last delivery.
    static let lastDeliveryScan = 50

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.GET, "/apps/{app}/devices", on: router) { request in
            let app = try await apps.app(request)
            return try await search(app, request)
        }
        api.add(.GET, "/apps/{app}/devices/{token}", on: router) { request in
            let app = try await apps.app(request)
            return try await detail(app, request)
        }
        api.add(.PATCH, "/apps/{app}/devices/{token}", bodyLimit: 4096, on: router) { request in
            let app = try await apps.app(request)
            return try await update(app, request)
        }
        api.add(.DELETE, "/apps/{app}/devices/{token}", on: router) { request in
            let app = try await apps.app(request)
            let token = try deviceToken(request)
            guard try await store.deleteDevice(appID: app.id, token: token) else { throw AdminError.notFound("device") }
            api.logger.info("console: device deleted", metadata: ["app": "\(app.id)"])
            return .empty(status: 204)
        }
        api.add(.PUT, "/apps/{app}/devices/{token}/tags/{tag}", on: router) { request in
            let app = try await apps.app(request)
            let (token, tag) = try (deviceToken(request), tagName(request))
            try await existing { try await store.addTag(appID: app.id, token: token, tag: tag) }
            return .json(object: ["tags": try await store.tags(appID: app.id, token: token)])
        }
        api.add(.DELETE, "/apps/{app}/devices/{token}/tags/{tag}", on: router) { request in
            let app = try await apps.app(request)
            let (token, tag) = try (deviceToken(request), tagName(request))
            guard try await existing({ try await store.removeTag(appID: app.id, token: token, tag: tag) }) else {
                throw AdminError(404, "tag_not_found", "the device does not have tag \"\(tag.value)\"", field: "tag")
            }
            return .json(object: ["tags": try await store.tags(appID: app.id, token: token)])
        }
        api.add(.GET, "/apps/{app}/tags", on: router) { request in
            let app = try await apps.app(request)
            let tags = try await store.tagUsage(appID: app.id, limit: 1000)
            return .json(object: ["tags": tags.map { ["name": $0.name, "devices": $0.devices] }])
        }
    }

    /// `PATCH /apps/{id}/devices/{token}` with `{"user": "u-42"}` or `{"user": null}` (detaches
    /// the user, as the native API's `PUT /api/v1/devices/{token}` does; an empty user is
    /// refused). Answers the device as the detail view shows it.
    private func update(_ app: App, _ request: Request) async throws -> Response {
        let token = try deviceToken(request)
        let body = try AdminBody(request)
        if let unknown = body.object.keys.first(where: { $0 != "user" }) {
            throw AdminError.invalid(unknown, "unknown field \"\(unknown)\"; the console changes a device's user")
        }
        guard body.object.keys.contains("user") else { throw AdminError.invalid("user", "\"user\" is required") }
        let user = try body.string("user", maxLength: 256)?.trimmingCharacters(in: .whitespaces)
        if let user, user.isEmpty {
            throw AdminError(
                400, "invalid_user", "user must be 1–256 characters; send \"user\": null to detach the device's user",
                field: "user")
        }
        guard let device = try await store.device(appID: app.id, token: token) else {
            throw AdminError.notFound("device")
        }
        _ = try await store.registerDevice(
            appID: app.id,
            DeviceRegistration(
                token: token, environment: device.environment, user: user ?? DeviceRegistration.noUser,
                channel: device.channel))
        return try await detail(app, request)
    }

    private func deviceToken(_ request: Request) throws -> DeviceToken {
        guard let token = DeviceToken(addressing: request.pathParameters["token"] ?? "") else {
            throw AdminError.notFound("device")
        }
        return token
    }

    private func tagName(_ request: Request) throws -> TagName {
        do {
            return try DeviceRules.tag(request.pathParameters["tag"] ?? "")
        } catch {
            throw AdminError(400, error.code, error.message, field: "tag")
        }
    }

    /// `body`, with the store's "no such device" as the admin API's 404.
    private func existing<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as StoreError where error.code == .notFound {
            throw AdminError.notFound("device")
        }
    }

    /// `GET /apps/{id}/devices?by=token|user|tag|all&q=…&cursor=…&limit=…`
    private func search(_ app: App, _ request: Request) async throws -> Response {
        let text = (request.query["q"] ?? "").trimmingCharacters(in: .whitespaces)
        var by = request.query["by"] ?? ""
        if by.isEmpty { by = text.isEmpty ? "all" : "token" }
        let query: DeviceQuery
        switch by {
        case "all":
            query = .all
        case "token":
            guard text.isEmpty || DeviceToken(addressing: text) != nil else {
                throw AdminError(
                    400, "invalid_token",
                    "a token is hexadecimal digits\(DeviceRules.hexTokensChannel) or letters, digits and -_.:~",
                    field: "q")
            }
            query = text.isEmpty ? .all : .tokenPrefix(text)
        case "user":
            guard !text.isEmpty, text.count <= 256 else {
                throw AdminError(400, "invalid_user", "enter a user or IM account (1–256 characters)", field: "q")
            }
            query = .user(text)
        case "tag":
            guard let tag = TagName(text) else {
                throw AdminError(
                    400, "invalid_tag", "a tag is \(TagName.rule)", field: "q")
            }
            query = .tag(tag)
        default:
            throw AdminError.invalid("by", "\"by\" must be all, token, user or tag")
        }
        var limit = 50
        if let raw = request.query["limit"] {
            guard let value = Int(raw), (1...500).contains(value) else {
                throw AdminError.invalid("limit", "limit must be 1–500")
            }
            limit = value
        }
        let cursor = request.query["cursor"].flatMap { $0.isEmpty ? nil : $0 }
        let page = try await store.searchDevices(appID: app.id, query: query, cursor: cursor, limit: limit)
        let vendorValues = try await vendorValues(app, page.items)
        return .json(object: [
            "devices": page.items.map { device in
                var object = Self.view(device)
                object["vendor_values"] = vendorValues[device.id] ?? [:]
                return object
            },
            "vendor_columns": vendorColumns,
            "next_cursor": orNull(page.nextCursor),
            "total": try await store.deviceCount(appID: app.id),
        ])
    }

    private func detail(_ app: App, _ request: Request) async throws -> Response {
        guard let token = DeviceToken(addressing: request.pathParameters["token"] ?? "") else {
            throw AdminError.notFound("device")
        }
        guard let device = try await store.device(appID: app.id, token: token) else {
            throw AdminError.notFound("device")
        }
        let tags = try await store.tags(appID: app.id, token: token)
        let rows = try await store.deliveries(deviceID: device.id, limit: 20)
        var object = Self.view(device)
        object["tags"] = tags
        object["vendor_columns"] = vendorColumns
        object["vendor_values"] = try await vendorValues(app, [device])[device.id] ?? [:]
        object["recent_problems"] = rows.map { row -> [String: Any] in
            var entry = MessageView.delivery(row)
            entry["message_id"] = row.messageID
            return entry
        }
        object["last_delivery"] = orNull(try await lastDelivery(device, tags: Set(tags), rows: rows))
        return .json(object: object)
    }

    /// The device columns the mounted providers declare:
    /// `[{"vendor": "acme", "key": "channel_id", "label": {"en", "zh"}}]`.
    var vendorColumns: [[String: Any]] {
        api.providers.flatMap { provider in
            type(of: provider).deviceColumns.map { column -> [String: Any] in
                [
                    "vendor": type(of: provider).name, "key": column.key,
                    "label": ["en": column.label.en, "zh": column.label.zh],
                ]
            }
        }
    }

    /// Device id → vendor → column key → value, from each mounted provider that declares
    /// columns. A provider that fails to answer leaves its columns empty (logged): the device
    /// view still shows.
    private func vendorValues(_ app: App, _ devices: [Device]) async throws -> [Int64: [String: [String: String]]] {
        var result: [Int64: [String: [String: String]]] = [:]
        let ids = devices.map(\.id)
        guard !ids.isEmpty else { return result }
        for provider in api.providers where !type(of: provider).deviceColumns.isEmpty {
            let name = type(of: provider).name
            do {
                for (id, values) in try await provider.deviceColumnValues(appID: app.id, deviceIDs: ids) {
                    result[id, default: [:]][name] = values
                }
            } catch {
                api.logger.error(
                    "admin: a provider's device columns failed", metadata: ["provider": "\(name)", "error": "\(error)"])
            }
        }
        return result
    }

    static func view(_ device: Device) -> [String: Any] {
        [
            "id": device.id,
            "token": device.token,
            "channel": device.channel.rawValue,
            "environment": device.environment.rawValue,
            "user": orNull(device.user),
            "locale": orNull(device.locale),
            "im_account": orNull(device.imAccount),
            "created_at": ISO8601.string(device.createdAt),
            "updated_at": ISO8601.string(device.updatedAt),
            "invalidated_at": AdminTime.string(device.invalidatedAt),
            "invalid_reason": orNull(device.invalidReason),
        ]
    }

    /// The newest of the app's recent messages whose audience takes in this device, with
    /// what became of it for this device. Only failed, retried, held and skipped deliveries
    /// leave a row; a device without a row for a message whose dispatch has passed it was
    /// delivered the first time.
    private func lastDelivery(_ device: Device, tags: Set<String>, rows: [DeliveryRecord]) async throws
        -> [String: Any]?
    {
        let messages = try await store.messages(appID: device.appID, limit: Self.lastDeliveryScan)
        for message in messages {
            guard let position = Self.position(of: device, in: message, tags: tags) else { continue }
            var result: [String: Any] = [
                "message_id": message.id,
                "vendor": message.vendor,
                "message_state": message.state.rawValue,
                "created_at": ISO8601.string(message.createdAt),
            ]
            if let row = rows.first(where: { $0.messageID == message.id }) {
                result["state"] = row.state.rawValue
                result["reason"] = orNull(row.reason)
                result["at"] = ISO8601.string(row.updatedAt)
                result["attempts"] = row.attempts
                return result
            }
            switch message.state {
            case .scheduled, .queued:
                result["state"] = "queued"
            case .cancelled:
                result["state"] = "cancelled"
            case .sending:
                result["state"] = message.cursor >= position ? "delivered" : "queued"
            case .completed:
                result["state"] = "delivered"
                result["at"] = AdminTime.string(message.completedAt)
            }
            result["reason"] = NSNull()
            return result
        }
        return nil
    }

    /// The device's audience position in the message (what the dispatch cursor counts), or
    /// nil when the message does not address it.
    static func position(of device: Device, in message: MessageRecord, tags: Set<String>) -> Int64? {
        if case .tokens(let tokens) = message.audience {
            return tokens.firstIndex(of: device.token).map { Int64($0 + 1) }
        }
        if let environment = message.options.environment, environment != device.environment { return nil }
        switch message.audience {
        case .all:
            return device.createdAt <= (message.completedAt ?? .distantFuture) ? device.id : nil
        case .tag(let tag):
            return tags.contains(tag) ? device.id : nil
        case .tagSelection(let selection):
            return selection.matches(tags) ? device.id : nil
        case .devices(let ids):
            return ids.contains(device.id) ? device.id : nil
        case .accounts(let accounts):
            guard let account = device.imAccount, accounts.contains(account) else { return nil }
            return device.id
        case .allAccounts:
            return device.imAccount == nil ? nil : device.id
        case .tokens:
            return nil
        }
    }
}
