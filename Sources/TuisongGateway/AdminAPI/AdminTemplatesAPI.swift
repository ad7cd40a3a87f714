import Foundation
import TuisongCore
import TuisongHTTP

/// Templates of an app: name, title pattern and body pattern with `{0}`, `{1}`, … placeholders.
struct AdminTemplatesAPI: Sendable {
    let api: AdminAPI

    var store: any AdminStore { api.store }
    static let maxPatternLength = 2000

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.GET, "/apps/{app}/templates", on: router) { request in
            let app = try await apps.app(request)
            return .json(object: ["templates": try await store.templates(appID: app.id).map(Self.view)])
        }
        api.add(.POST, "/apps/{app}/templates", bodyLimit: 64 << 10, on: router) { request in
            let app = try await apps.app(request)
            let fields = try Self.fields(AdminBody(request))
            if try await store.template(appID: app.id, name: fields.name) != nil {
                throw AdminError(
                    409, "template_name_taken", "this app already has a template named \"\(fields.name)\"",
                    field: "name",
                    params: ["name": fields.name])
            }
            let template = try await store.createTemplate(
                appID: app.id, name: fields.name, titlePattern: fields.title, bodyPattern: fields.body)
            return .json(object: Self.view(template), status: 201)
        }
        api.add(.PUT, "/apps/{app}/templates/{template}", bodyLimit: 64 << 10, on: router) { request in
            var template = try await template(request)
            let fields = try Self.fields(AdminBody(request))
            if let other = try await store.template(appID: template.appID, name: fields.name), other.id != template.id {
                throw AdminError(
                    409, "template_name_taken", "this app already has a template named \"\(fields.name)\"",
                    field: "name",
                    params: ["name": fields.name])
            }
            template.name = fields.name
            template.titlePattern = fields.title
            template.bodyPattern = fields.body
            try await store.updateTemplate(template)
            return .json(object: Self.view(template))
        }
        api.add(.DELETE, "/apps/{app}/templates/{template}", on: router) { request in
            let template = try await template(request)
            guard try await store.deleteTemplate(id: template.id) else { throw AdminError.notFound("template") }
            return .empty()
        }
    }

    /// The template named by the path, which must belong to the app in the path.
    func template(_ request: Request) async throws -> PushTemplate {
        let appID = try request.adminID("app", "app")
        let id = try request.adminID("template", "template")
        guard let template = try await store.template(id: id), template.appID == appID else {
            throw AdminError.notFound("template")
        }
        return template
    }

    static func view(_ template: PushTemplate) -> [String: Any] {
        [
            "id": template.id,
            "app_id": template.appID,
            "name": template.name,
            "title_pattern": template.titlePattern,
            "body_pattern": template.bodyPattern,
            "argument_count": template.argumentCount,
        ]
    }

    private static func fields(_ body: AdminBody) throws -> (name: String, title: String, body: String) {
        let name = try body.requiredString("name", maxLength: 100)
        guard !name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw AdminError(400, "invalid_name", "\"name\" must not contain control characters", field: "name")
        }
        let title = try body.string("title_pattern", maxLength: maxPatternLength) ?? ""
        let bodyPattern = try body.string("body_pattern", maxLength: maxPatternLength) ?? ""
        guard !bodyPattern.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
            throw AdminError.invalid("body_pattern", "\"body_pattern\" is required")
        }
        return (name, title, bodyPattern)
    }
}
