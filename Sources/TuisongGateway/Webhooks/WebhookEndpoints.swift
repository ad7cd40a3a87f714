import Foundation
import TuisongCore
import TuisongCrypto
import TuisongHTTPClient

/// A webhook request the gateway refuses: status, a stable code and a sentence (the native
/// API, the admin API and the CLI each render it in their own dialect).
public struct WebhookError: Error, Sendable, CustomStringConvertible {
    public var status: Int
    public var code: String
    public var message: String

    init(_ status: Int, _ code: String, _ message: String) {
        self.status = status
        self.code = code
        self.message = message
    }

    public var description: String { message }

    static func notFound(_ id: Int64) -> WebhookError {
        WebhookError(404, "webhook_not_found", "no webhook endpoint \(id) in this app")
    }
}

/// What the native API, the admin API and the CLI do with webhook endpoints: check the URL and
/// the events, make and seal the secret (shown once, in the answer that creates or rotates it),
/// and tell every node that an app's subscriptions changed.
public struct WebhookEndpoints: Sendable {
    let store: any GatewayStore
    let box: SecretBox
    let allowPrivateNetworks: Bool
    let clock: any Clock
    /// How long the secret before a rotation still signs events (both signatures are sent).
    static let rotationOverlap: TimeInterval = 24 * 3600

    public init(store: any GatewayStore, box: SecretBox, allowPrivateNetworks: Bool, clock: any Clock = SystemClock()) {
        self.store = store
        self.box = box
        self.allowPrivateNetworks = allowPrivateNetworks
        self.clock = clock
    }

    /// Creates an endpoint; returns it with its secret (`whsec_…`), which is never shown again.
    public func create(appID: Int64, url: String, events: [String]?, description: String?) async throws
        -> (endpoint: WebhookEndpoint, secret: String)
    {
        // The checks that need no network first; the URL's resolution last.
        let types = try Self.eventTypes(events) ?? WebhookEventType.defaults
        let text = try Self.description(description)
        try checkURL(url)
        let secret = WebhookSignature.newSecret()
        let endpoint = try await store.createWebhookEndpoint(
            NewWebhookEndpoint(
                appID: appID, url: url, description: text, events: types,
                encryptedSecret: try seal(secret, appID: appID)))
        await changed(appID)
        return (endpoint, secret)
    }

    /// The endpoint when it belongs to `appID` (nil: any app's, for the admin API).
    public func endpoint(_ id: Int64, appID: Int64?) async throws -> WebhookEndpoint {
        guard let endpoint = try await store.webhookEndpoint(id: id), appID == nil || endpoint.appID == appID else {
            throw WebhookError.notFound(id)
        }
        return endpoint
    }

    public func update(
        _ id: Int64, appID: Int64?, url: String?, events: [String]?, description: String?, enabled: Bool?
    ) async throws -> WebhookEndpoint {
        let existing = try await endpoint(id, appID: appID)
        if let url { try checkURL(url) }
        let change = WebhookEndpointChange(
            url: url, description: try description.map { try Self.description($0) },
            events: try Self.eventTypes(events),
            enabled: enabled)
        guard let updated = try await store.updateWebhookEndpoint(id: id, change, at: clock.now) else {
            throw WebhookError.notFound(id)
        }
        await changed(existing.appID)
        return updated
    }

    public func delete(_ id: Int64, appID: Int64?) async throws {
        let existing = try await endpoint(id, appID: appID)
        guard try await store.deleteWebhookEndpoint(id: id) else { throw WebhookError.notFound(id) }
        await changed(existing.appID)
    }

    /// A new secret; the old one still signs (a second signature) for `rotationOverlap`.
    public func rotateSecret(_ id: Int64, appID: Int64?) async throws -> (endpoint: WebhookEndpoint, secret: String) {
        let existing = try await endpoint(id, appID: appID)
        let secret = WebhookSignature.newSecret()
        let now = clock.now
        guard
            let rotated = try await store.rotateWebhookSecret(
                id: id, encryptedSecret: try seal(secret, appID: existing.appID),
                previousUntil: now.addingTimeInterval(Self.rotationOverlap), at: now)
        else { throw WebhookError.notFound(id) }
        await changed(existing.appID)
        return (rotated, secret)
    }

    /// Queues a `webhook.test` event for the endpoint alone; returns its event id.
    public func sendTest(_ id: Int64, appID: Int64?) async throws -> String {
        let existing = try await endpoint(id, appID: appID)
        guard
            let eventID = try await store.enqueueWebhookEvent(
                endpointID: id, type: .test,
                data: .object(["endpoint_id": .int(id), "app_id": .int(existing.appID)]), at: clock.now)
        else { throw WebhookError.notFound(id) }
        // Wakes every node's sender (and refreshes its endpoints).
        await changed(existing.appID)
        return eventID
    }

    /// Sends an event again (its outbox row due now, same `webhook-id`); the event must still
    /// be kept (failed ones are, for 7 days).
    public func resend(outboxID: Int64, endpointID: Int64) async throws {
        let existing = try await endpoint(endpointID, appID: nil)
        guard try await store.resendWebhookEvent(outboxID: outboxID, endpointID: endpointID, at: clock.now) else {
            throw WebhookError(404, "event_gone", "that event is no longer kept (delivered events go after an hour)")
        }
        await changed(existing.appID)
    }

    /// The HMAC keys that sign an event now: the current secret's, and the previous one's
    /// while its rotation overlap lasts.
    func signingKeys(of endpoint: WebhookEndpoint, at now: Date) throws -> [[UInt8]] {
        var keys = [try key(endpoint.encryptedSecret, appID: endpoint.appID)]
        if let previous = endpoint.encryptedPreviousSecret, let until = endpoint.previousSecretUntil, until > now {
            keys.append(try key(previous, appID: endpoint.appID))
        }
        return keys
    }

    // MARK: checks

    /// `https` (or `http` where private networks are allowed), a host, no user or fragment, and
    /// a host that resolves only to addresses a webhook may reach.
    func checkURL(_ text: String) throws {
        guard text.count <= 2048, let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty
        else {
            throw WebhookError(400, "invalid_url", "url must be an absolute https URL of at most 2048 characters")
        }
        guard scheme == "https" || (scheme == "http" && allowPrivateNetworks) else {
            throw WebhookError(
                400, "invalid_url",
                allowPrivateNetworks
                    ? "url must be http or https" : "url must be https (webhooks.allow_private_networks is off)")
        }
        guard url.user == nil, url.password == nil, url.fragment == nil else {
            throw WebhookError(400, "invalid_url", "url must carry no user, password or fragment")
        }
        guard !allowPrivateNetworks else { return }
        let addresses = try WebhookAddressRules.resolve(host)
        if let refused = addresses.first(where: { !WebhookAddressRules.isPublic($0) }) {
            throw WebhookError(
                400, "address_not_allowed",
                "\(host) resolves to \(refused), a loopback, private, link-local or reserved address; "
                    + "set webhooks.allow_private_networks to allow it")
        }
    }

    static func eventTypes(_ names: [String]?) throws -> [WebhookEventType]? {
        guard let names else { return nil }
        guard !names.isEmpty else {
            throw WebhookError(400, "invalid_events", "events must name at least one event, or be left out")
        }
        var types: [WebhookEventType] = []
        for name in names {
            guard let type = WebhookEventType(rawValue: name), type != .test else {
                throw WebhookError(
                    400, "invalid_events",
                    "unknown event \"\(name)\"; events are "
                        + WebhookEventType.subscribable.map(\.rawValue).joined(separator: ", "))
            }
            if !types.contains(type) { types.append(type) }
        }
        return types
    }

    static func description(_ text: String?) throws -> String {
        let text = text ?? ""
        guard text.count <= 500 else {
            throw WebhookError(400, "invalid_description", "description: at most 500 characters")
        }
        return text
    }

    // MARK: sealing

    private func seal(_ secret: String, appID: Int64) throws -> [UInt8] {
        try box.seal(Array(secret.utf8), associatedData: Self.associatedData(appID))
    }

    private func key(_ sealed: [UInt8], appID: Int64) throws -> [UInt8] {
        let secret = String(decoding: try box.open(sealed, associatedData: Self.associatedData(appID)), as: UTF8.self)
        guard let key = WebhookSignature.key(of: secret) else {
            throw WebhookError(500, "internal_error", "a stored webhook secret is not base64")
        }
        return key
    }

    /// Binds a sealed secret to its app: a row copied to another app does not decrypt.
    static func associatedData(_ appID: Int64) -> [UInt8] { Array("tuisong-webhook-secret-v1:\(appID)".utf8) }

    /// How the APIs and the CLI show an endpoint (never its secret).
    public static func view(_ endpoint: WebhookEndpoint) -> [String: Any] { WebhookEndpointView.object(endpoint) }

    private func changed(_ appID: Int64) async {
        await store.publish(.webhooks(appID: appID))
    }
}

/// How the APIs and the CLI show an endpoint: never its secret (only the answers that make one).
enum WebhookEndpointView {
    static func object(_ e: WebhookEndpoint) -> [String: Any] {
        var object: [String: Any] = [
            "id": e.id, "app_id": e.appID, "url": e.url, "description": e.description,
            "events": e.events.map(\.rawValue), "enabled": e.isEnabled,
            "created_at": RFC3339Text.string(e.createdAt), "updated_at": RFC3339Text.string(e.updatedAt),
        ]
        if let at = e.disabledAt { object["disabled_at"] = RFC3339Text.string(at) }
        if let reason = e.disabledReason { object["disabled_reason"] = reason }
        if let since = e.failingSince { object["failing_since"] = RFC3339Text.string(since) }
        if let until = e.previousSecretUntil, e.encryptedPreviousSecret != nil {
            object["previous_secret_until"] = RFC3339Text.string(until)
        }
        return object
    }

    static func attempt(_ a: WebhookAttempt) -> [String: Any] {
        var object: [String: Any] = [
            "id": a.id, "outbox_id": a.outboxID, "event_id": a.eventID, "type": a.type,
            "attempted_at": RFC3339Text.string(a.attemptedAt), "latency_ms": a.latencyMilliseconds,
            "response": a.response,
        ]
        object["status"] = a.status ?? NSNull()
        return object
    }
}

enum RFC3339Text {
    static func string(_ date: Date) -> String {
        Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date)
    }
}
