import Foundation
import TuisongCore
import TuisongHTTP
import TuisongTransportKit

/// An app's receipts: what the operator registers in each service's receipt configuration (the
/// URL, and for the services that sign, the callback user name and key, which the operator must
/// copy into the service's console: shown here to an authenticated admin, never logged), and
/// whether the app posts its own receipts.
///
///     GET  /apps/{app}/receipts
///     PUT  /apps/{app}/receipts                    {"app_receipts": true}
///     PUT  /apps/{app}/receipts/{channel}          {"callback_user_name": "…", "callback_key": "…"}
///     POST /apps/{app}/receipts/{channel}/rotate
struct AdminReceiptsAPI: Sendable {
    let api: AdminAPI

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.GET, "/apps/{app}/receipts", on: router) { request in
            .json(object: try await view(try await apps.app(request)))
        }
        api.add(.PUT, "/apps/{app}/receipts", bodyLimit: 4096, on: router) { request in
            var app = try await apps.app(request)
            let body = try AdminBody(request)
            guard let enabled = body.object["app_receipts"] as? Bool else {
                throw AdminError.invalid("app_receipts", "\"app_receipts\" must be true or false")
            }
            app.appReceipts = enabled
            try await api.store.updateApp(app)
            await api.appChanged(app.id)
            api.logger.info(
                "console: changed an app's own receipts", metadata: ["app": "\(app.id)", "app_receipts": "\(enabled)"])
            return .json(object: try await view(app))
        }
        api.add(.PUT, "/apps/{app}/receipts/{channel}", bodyLimit: 4096, on: router) { request in
            let app = try await apps.app(request)
            let channel = try signingChannel(request)
            let body = try AdminBody(request)
            let userName = try body.requiredString("callback_user_name", maxLength: 64)
            let key = try body.requiredString("callback_key", maxLength: 64)
            guard CallbackCredentials.isValid(userName) else {
                throw AdminError.invalid(
                    "callback_user_name", "the callback user name is 1–64 printable ASCII characters without spaces")
            }
            guard CallbackCredentials.isValid(key) else {
                throw AdminError.invalid(
                    "callback_key", "the callback key is 1–64 printable ASCII characters without spaces")
            }
            try await api.receiptCredentials.set(
                CallbackCredentials(userName: userName, key: key), appID: app.id, channel: channel)
            await api.changes?.publish(.receiptCallbackCredentials(appID: app.id))
            api.logger.info(
                "console: set an app's receipt callback credentials",
                metadata: ["app": "\(app.id)", "channel": "\(channel.rawValue)"])
            return .json(object: try await service(app, channel))
        }
        api.add(.POST, "/apps/{app}/receipts/{channel}/rotate", on: router) { request in
            let app = try await apps.app(request)
            let channel = try signingChannel(request)
            _ = try await api.receiptCredentials.rotate(appID: app.id, channel: channel)
            await api.changes?.publish(.receiptCallbackCredentials(appID: app.id))
            api.logger.info(
                "console: rotated an app's receipt callback key",
                metadata: ["app": "\(app.id)", "channel": "\(channel.rawValue)"])
            return .json(object: try await service(app, channel))
        }
    }

    /// `{"app_receipts", "receipts_url", "services": [{"channel", "url", "callback_user_name",
    /// "callback_key"}]}`; `url` empty while `receipts.public_url` is unset (outside local mode).
    func view(_ app: App) async throws -> [String: Any] {
        let base = api.receiptBaseURL()
        return [
            "app_receipts": app.appReceipts,
            "receipts_url": base.isEmpty
                ? "" : (base.hasSuffix("/") ? String(base.dropLast()) : base) + "/api/v1/receipts",
            "services": try await api.receiptCredentials.registrations(appID: app.id, baseURL: base),
        ]
    }

    private func service(_ app: App, _ channel: PushChannel) async throws -> [String: Any] {
        let all = try await api.receiptCredentials.registrations(appID: app.id, baseURL: api.receiptBaseURL())
        let found: [String: String] = all.first { $0["channel"] == channel.rawValue } ?? [:]
        return found
    }

    /// The path's channel, one whose service signs with callback credentials; 404 otherwise.
    private func signingChannel(_ request: Request) throws -> PushChannel {
        guard let raw = request.pathParameters["channel"], let channel = PushChannel(rawValue: raw),
            api.receiptCredentials.uses(channel)
        else { throw AdminError.notFound("service with callback credentials") }
        return channel
    }
}
