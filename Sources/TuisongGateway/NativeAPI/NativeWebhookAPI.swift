import Foundation
import Logging
import TuisongCore
import TuisongHTTP

/// The native API's webhook endpoints under `/api/v1/webhooks`: an app sees and changes only
/// its own. Errors in the native dialect, `{"error": {"code", "message"}}`.
struct NativeWebhookAPI: Sendable {
    let webhooks: WebhookEndpoints
    let store: any GatewayStore
    let authenticator: APIKeyAuthenticator

    func register(on router: Router) {
        router.add(.POST, "/api/v1/webhooks", bodyLimit: 16 << 10) { request in
            await withApp(request) { app in
                let body = try Self.body(request)
                guard let url = body["url"] as? String else {
                    throw NativeAPIError(400, "invalid_request", "url is required (an https URL)")
                }
                let (endpoint, secret) = try await webhooks.create(
                    appID: app.id, url: url, events: try Self.events(body),
                    description: try Self.text(body, "description"))
                var object = WebhookEndpointView.object(endpoint)
                object["secret"] = secret
                return .json(object: object, status: 201)
            }
        }
        router.add(.GET, "/api/v1/webhooks") { request in
            await withApp(request) { app in
                .json(object: [
                    "webhooks": try await store.webhookEndpoints(appID: app.id).map(WebhookEndpointView.object)
                ])
            }
        }
        router.add(.GET, "/api/v1/webhooks/{id}") { request in
            await withApp(request) { app in
                let endpoint = try await webhooks.endpoint(try Self.id(request), appID: app.id)
                var object = WebhookEndpointView.object(endpoint)
                object["attempts"] = try await store.webhookAttempts(endpointID: endpoint.id, limit: 20)
                    .map(WebhookEndpointView.attempt)
                return .json(object: object)
            }
        }
        router.add(.PATCH, "/api/v1/webhooks/{id}", bodyLimit: 16 << 10) { request in
            await withApp(request) { app in
                let body = try Self.body(request)
                var enabled: Bool?
                if let raw = body["enabled"] {
                    guard JSONValue.isBoolean(raw), let flag = raw as? Bool else {
                        throw NativeAPIError(400, "invalid_request", "enabled must be true or false")
                    }
                    enabled = flag
                }
                let endpoint = try await webhooks.update(
                    try Self.id(request), appID: app.id, url: try Self.text(body, "url"), events: try Self.events(body),
                    description: try Self.text(body, "description"), enabled: enabled)
                return .json(object: WebhookEndpointView.object(endpoint))
            }
        }
        router.add(.DELETE, "/api/v1/webhooks/{id}") { request in
            await withApp(request) { app in
                try await webhooks.delete(try Self.id(request), appID: app.id)
                return .empty(status: 204)
            }
        }
        router.add(.POST, "/api/v1/webhooks/{id}/rotate-secret") { request in
            await withApp(request) { app in
                let (endpoint, secret) = try await webhooks.rotateSecret(try Self.id(request), appID: app.id)
                var object = WebhookEndpointView.object(endpoint)
                object["secret"] = secret
                return .json(object: object)
            }
        }
        router.add(.POST, "/api/v1/webhooks/{id}/test") { request in
            await withApp(request) { app in
                let eventID = try await webhooks.sendTest(try Self.id(request), appID: app.id)
                return .json(object: ["event_id": eventID, "type": WebhookEventType.test.rawValue], status: 202)
            }
        }
    }

    /// The app, and webhook errors in the native dialect.
    private func withApp(_ request: Request, _ body: @escaping (App) async throws -> Response) async -> Response {
        await authenticator.withApp(request) { app in
            do {
                return try await body(app)
            } catch let error as WebhookError {
                throw NativeAPIError(error.status, error.code, error.message)
            }
        }
    }

    static func id(_ request: Request) throws -> Int64 {
        guard let raw = request.pathParameters["id"], let id = Int64(raw), id > 0 else {
            throw NativeAPIError(400, "invalid_webhook_id", "a webhook id is a positive integer")
        }
        return id
    }

    static func body(_ request: Request) throws -> [String: Any] {
        let body: [String: Any]
        do {
            body = try request.jsonObject()
        } catch {
            throw NativeAPIError(httpError: error)
        }
        if let unknown = body.keys.first(where: { !["url", "events", "description", "enabled"].contains($0) }) {
            throw NativeAPIError(
                400, "invalid_request",
                "unknown field \"\(unknown)\"; a webhook takes url, events, description and enabled")
        }
        return body
    }

    static func text(_ body: [String: Any], _ key: String) throws -> String? {
        guard let value = body[key] else { return nil }
        guard let text = value as? String else {
            throw NativeAPIError(400, "invalid_request", "\(key) must be a string")
        }
        return text
    }

    static func events(_ body: [String: Any]) throws -> [String]? {
        guard let value = body["events"] else { return nil }
        guard let names = value as? [String] else {
            throw NativeAPIError(400, "invalid_events", "events must be an array of event names")
        }
        return names
    }
}
