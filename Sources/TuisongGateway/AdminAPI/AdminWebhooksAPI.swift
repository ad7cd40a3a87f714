import Foundation
import TuisongCore
import TuisongHTTP

/// An app's webhook endpoints in the console: the native API's operations under
/// `/admin/api/apps/{app}/webhooks`, each endpoint with its recent attempts, and a resend of
/// one attempt's event (its outbox row due again, same `webhook-id`).
struct AdminWebhooksAPI: Sendable {
    let api: AdminAPI
    let webhooks: WebhookEndpoints

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.GET, "/apps/{app}/webhooks", on: router) { request in
            let app = try await apps.app(request)
            return .json(object: [
                "webhooks": try await webhooks.store.webhookEndpoints(appID: app.id).map(WebhookEndpointView.object)
            ])
        }
        api.add(.POST, "/apps/{app}/webhooks", bodyLimit: 16 << 10, on: router) { request in
            let app = try await apps.app(request)
            let body = try AdminBody(request).object
            guard let url = body["url"] as? String else { throw AdminError.invalid("url", "url is required") }
            let (endpoint, secret) = try await mapped {
                try await webhooks.create(
                    appID: app.id, url: url, events: body["events"] as? [String],
                    description: body["description"] as? String)
            }
            var object = WebhookEndpointView.object(endpoint)
            object["secret"] = secret
            return .json(object: object, status: 201)
        }
        api.add(.GET, "/apps/{app}/webhooks/{webhook}", on: router) { request in
            let (appID, id) = try ids(request)
            let endpoint = try await mapped { try await webhooks.endpoint(id, appID: appID) }
            var object = WebhookEndpointView.object(endpoint)
            object["attempts"] = try await webhooks.store.webhookAttempts(endpointID: id, limit: 50)
                .map(WebhookEndpointView.attempt)
            return .json(object: object)
        }
        api.add(.PATCH, "/apps/{app}/webhooks/{webhook}", bodyLimit: 16 << 10, on: router) { request in
            let (appID, id) = try ids(request)
            let body = try AdminBody(request).object
            let endpoint = try await mapped {
                try await webhooks.update(
                    id, appID: appID, url: body["url"] as? String, events: body["events"] as? [String],
                    description: body["description"] as? String, enabled: body["enabled"] as? Bool)
            }
            return .json(object: WebhookEndpointView.object(endpoint))
        }
        api.add(.DELETE, "/apps/{app}/webhooks/{webhook}", on: router) { request in
            let (appID, id) = try ids(request)
            try await mapped { try await webhooks.delete(id, appID: appID) }
            return .empty()
        }
        api.add(.POST, "/apps/{app}/webhooks/{webhook}/rotate-secret", on: router) { request in
            let (appID, id) = try ids(request)
            let (endpoint, secret) = try await mapped { try await webhooks.rotateSecret(id, appID: appID) }
            var object = WebhookEndpointView.object(endpoint)
            object["secret"] = secret
            return .json(object: object)
        }
        api.add(.POST, "/apps/{app}/webhooks/{webhook}/test", on: router) { request in
            let (appID, id) = try ids(request)
            let eventID = try await mapped { try await webhooks.sendTest(id, appID: appID) }
            return .json(object: ["event_id": eventID], status: 202)
        }
        api.add(.POST, "/apps/{app}/webhooks/{webhook}/attempts/{attempt}/resend", on: router) { request in
            let (appID, id) = try ids(request)
            _ = try await mapped { try await webhooks.endpoint(id, appID: appID) }
            let attemptID = try request.adminID("attempt", "attempt")
            guard
                let attempt = try await webhooks.store.webhookAttempts(endpointID: id, limit: 100)
                    .first(where: { $0.id == attemptID })
            else { throw AdminError.notFound("attempt") }
            try await mapped { try await webhooks.resend(outboxID: attempt.outboxID, endpointID: id) }
            return .json(object: ["event_id": attempt.eventID], status: 202)
        }
    }

    private func ids(_ request: Request) throws -> (app: Int64, webhook: Int64) {
        (try request.adminID("app", "app"), try request.adminID("webhook", "webhook"))
    }

    /// Webhook errors in the admin dialect.
    private func mapped<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as WebhookError {
            throw AdminError(error.status, error.code == "webhook_not_found" ? "not_found" : error.code, error.message)
        }
    }
}
