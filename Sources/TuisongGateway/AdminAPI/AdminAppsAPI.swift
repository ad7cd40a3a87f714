import Foundation
import TuisongCore
import TuisongHTTP

/// Apps: create, edit (name, bundle id, vendor settings), delete, regenerate the API key.
struct AdminAppsAPI: Sendable {
    let api: AdminAPI

    var store: any AdminStore { api.store }

    func register(on router: Router) {
        api.add(.GET, "/apps", on: router) { _ in try await list() }
        api.add(.POST, "/apps", bodyLimit: 64 << 10, on: router) { request in try await create(request) }
        api.add(.GET, "/apps/{app}", on: router) { request in
            .json(object: try await view(try await app(request)))
        }
        api.add(.PUT, "/apps/{app}", bodyLimit: 64 << 10, on: router) { request in try await update(request) }
        api.add(.DELETE, "/apps/{app}", on: router) { request in try await delete(request) }
        api.add(.POST, "/apps/{app}/api-key", on: router) { request in try await regenerateKey(request) }
    }

    func app(_ request: Request) async throws -> App {
        let id = try request.adminID("app", "app")
        guard let app = try await store.app(id: id) else { throw AdminError.notFound("app") }
        return app
    }

    func view(_ app: App, deviceCount: Int? = nil) async throws -> [String: Any] {
        let devices: Int
        if let deviceCount {
            devices = deviceCount
        } else {
            devices = try await store.deviceCount(appID: app.id)
        }
        return [
            "id": app.id,
            "name": app.name,
            "bundle_id": app.bundleID,
            "created_at": ISO8601.string(app.createdAt),
            "updated_at": ISO8601.string(app.updatedAt),
            "devices": devices,
            "vendors": AdminVendorSettings.view(app.vendorSettings),
        ]
    }

    private func list() async throws -> Response {
        var views: [[String: Any]] = []
        for app in try await store.apps() {
            views.append(try await view(app))
        }
        return .json(object: ["apps": views])
    }

    private static func validatedName(_ body: AdminBody) throws -> String {
        let name = try body.requiredString("name", maxLength: 200)
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw AdminError(400, "invalid_name", "\"name\" must not contain control characters", field: "name")
        }
        return name
    }

    /// Another app of this name and bundle id: `409 app_name_taken`, with what the console
    /// words it with.
    private static func nameTaken(_ namesake: App) -> AdminError {
        AdminError(
            409, "app_name_taken", App.namesakeMessage(namesake), field: "name",
            params: ["id": String(namesake.id), "name": namesake.name, "bundle_id": namesake.bundleID])
    }

    private static func validatedBundleID(_ body: AdminBody) throws -> String {
        let bundleID = try body.requiredString("bundle_id", maxLength: 155)
        guard BundleID.isValid(bundleID) else {
            throw AdminError(
                400, "invalid_bundle_id", "\"bundle_id\" must be a reverse-DNS bundle id such as com.example.app",
                field: "bundle_id")
        }
        return bundleID
    }

    /// `POST /apps {"name", "bundle_id", "vendors"?}` → 201 with the app and its API key,
    /// shown this once.
    private func create(_ request: Request) async throws -> Response {
        let body = try AdminBody(request)
        let name = try Self.validatedName(body)
        let bundleID = try Self.validatedBundleID(body)
        let vendorEdit = try body.object("vendors")
        if let namesake = App.namesake(of: name, bundleID: bundleID, among: try await store.apps()) {
            throw Self.nameTaken(namesake)
        }
        let key = APIKey.generate()
        var app = try await store.createApp(name: name, bundleID: bundleID, apiKeyHash: APIKey.hash(key))
        if let vendorEdit {
            do {
                try AdminVendorSettings.apply(
                    vendorEdit, to: &app, sealer: api.sealer, otherApps: try await store.apps())
                try await store.updateApp(app)
            } catch {
                // The app was created for this request only; do not leave half of it behind.
                _ = try? await store.deleteApp(id: app.id)
                throw error
            }
        }
        api.logger.info("console: created an app", metadata: ["app": "\(app.id)", "bundle_id": "\(bundleID)"])
        return .json(object: ["app": try await view(app, deviceCount: 0), "api_key": key], status: 201)
    }

    /// `PUT /apps/{id} {"name"?, "bundle_id"?, "vendors"?}`: fields left out stay as they are.
    private func update(_ request: Request) async throws -> Response {
        var app = try await app(request)
        let body = try AdminBody(request)
        if body.has("name") { app.name = try Self.validatedName(body) }
        if body.has("bundle_id") { app.bundleID = try Self.validatedBundleID(body) }
        if body.has("name") || body.has("bundle_id"),
            let namesake = App.namesake(
                of: app.name, bundleID: app.bundleID, among: try await store.apps(), excluding: app.id)
        {
            throw Self.nameTaken(namesake)
        }
        if let vendorEdit = try body.object("vendors") {
            try AdminVendorSettings.apply(vendorEdit, to: &app, sealer: api.sealer, otherApps: try await store.apps())
        }
        try await store.updateApp(app)
        guard let saved = try await store.app(id: app.id) else { throw AdminError.notFound("app") }
        await api.appChanged(app.id)
        return .json(object: try await view(saved))
    }

    private func delete(_ request: Request) async throws -> Response {
        let id = try request.adminID("app", "app")
        guard try await store.deleteApp(id: id) else { throw AdminError.notFound("app") }
        await api.appChanged(id)
        api.logger.info("console: deleted an app", metadata: ["app": "\(id)"])
        return .empty()
    }

    /// A new native API key; the old one stops working at once.
    private func regenerateKey(_ request: Request) async throws -> Response {
        var app = try await app(request)
        let key = APIKey.generate()
        app.apiKeyHash = APIKey.hash(key)
        try await store.updateApp(app)
        await api.appChanged(app.id)
        api.logger.info("console: regenerated an app's API key", metadata: ["app": "\(app.id)"])
        return .json(object: ["api_key": key])
    }
}
