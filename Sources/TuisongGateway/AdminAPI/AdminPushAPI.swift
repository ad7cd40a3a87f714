import Foundation
import TuisongCore
import TuisongDelivery
import TuisongHTTP
import TuisongTransportKit

/// Test pushes from the console and the messages they (and every other API) created.
///
/// The body of a test push is the native push body with a console-sized audience and an
/// optional template:
///
///     {"environment": "sandbox", "audience": {"token": "ab12…"},
///      "notification": {"alert": {"title": "Hi", "body": "There"}, "badge": 1, "custom": {"k": 1}},
///      "template_id": 3, "arguments": ["A-17"]}
struct AdminPushAPI: Sendable {
    let api: AdminAPI

    var store: any AdminStore { api.store }

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.POST, "/apps/{app}/push", bodyLimit: 64 << 10, on: router) { request in
            let app = try await apps.app(request)
            return try await push(app, request)
        }
        api.add(.POST, "/apps/{app}/push/preview", bodyLimit: 64 << 10, on: router) { request in
            let app = try await apps.app(request)
            return try await preview(app, request)
        }
        api.add(.GET, "/messages", on: router) { request in try await recent(request) }
        api.add(.DELETE, "/messages/{message}", on: router) { request in try await cancel(request) }
        api.add(.GET, "/messages/{message}/bodies", on: router) { request in
            let id = try request.adminID("message", "message")
            guard let record = try await store.message(id: id) else { throw AdminError.notFound("message") }
            let used = Set(try await store.channelCounts(messageID: id).keys)
            let app = try await store.app(id: record.appID)
            let bodies = try await serviceBodies(
                content: record.content, headers: PushHeaders(record.options, messageID: id, appID: record.appID),
                environment: record.options.environment, appID: record.appID, appName: app?.name ?? "",
                token: nil, channels: nil)
            // The services the message went to first, then the others.
            let ordered = bodies.filter { used.contains($0.channel) } + bodies.filter { !used.contains($0.channel) }
            return .json(object: [
                "services": ordered.map { body in
                    var object = body.object
                    object["used"] = used.contains(body.channel)
                    return object
                }
            ])
        }
        api.add(.GET, "/messages/{message}", on: router) { request in
            let id = try request.adminID("message", "message")
            guard let status = try await status(id) else { throw AdminError.notFound("message") }
            return .json(
                object: try await withReceipts(Self.view(status, detailed: true, config: api.config), messageID: id))
        }
    }

    /// Parses the console's body into the job the native API would build for it.
    func job(_ app: App, _ body: AdminBody) async throws -> PushJob {
        var native: [String: Any] = [:]
        guard let audience = try body.object("audience"), audience.count == 1, let (kind, value) = audience.first else {
            throw AdminError.invalid("audience", "choose one audience: a device, a tag or all devices")
        }
        switch kind {
        case "token":
            guard let raw = value as? String,
                let token = DeviceToken(addressing: raw.trimmingCharacters(in: .whitespaces))
            else {
                throw AdminError(
                    400, "invalid_token",
                    "a device token is 64–200 hexadecimal digits\(DeviceRules.hexTokensChannel) or an Android service's token",
                    field: "audience.token")
            }
            native["audience"] = ["tokens": [token.hex]]
        case "tag", "all":
            native["audience"] = audience
        default:
            throw AdminError.invalid("audience", "the audience is a token, a tag or all")
        }
        if let environment = try body.string("environment"), !environment.isEmpty {
            native["environment"] = environment
        }
        var notification = try body.object("notification") ?? [:]
        if let templateID = try body.integer("template_id") {
            guard let template = try await store.template(id: Int64(templateID)), template.appID == app.id else {
                throw AdminError.invalid("template_id", "this app has no such template")
            }
            let arguments = try body.strings("arguments", maxCount: 100) ?? []
            let rendered = template.render(arguments: arguments)
            var alert = notification["alert"] as? [String: Any] ?? [:]
            if !rendered.title.isEmpty { alert["title"] = rendered.title }
            alert["body"] = rendered.body
            notification["alert"] = alert
        }
        native["notification"] = notification
        for key in ["push_type", "priority", "collapse_id", "expiration"] where body.has(key) {
            native[key] = body.object[key]
        }
        var job = try NativePushRequest.parse(
            native, appID: app.id, now: api.clock.now, transports: api.config.transports.registry)
        job.vendor = "console"
        job.labels["source"] = "console"
        return job
    }

    private func push(_ app: App, _ request: Request) async throws -> Response {
        guard let gateway = api.gateway else {
            throw AdminError(503, "push_unavailable", "this gateway runs no delivery engine")
        }
        let job = try await job(app, try AdminBody(request))
        do {
            try await gateway.admit(appID: app.id)
        } catch let error as BacklogFull {
            throw AdminError(429, "backlog_full", error.explanation, retryAfter: error.retryAfterSeconds)
        }
        let record = try await gateway.submit(job)
        api.logger.info(
            "console: test push",
            metadata: ["message": "\(record.id)", "app": "\(app.id)", "audience": "\(job.audience.summary)"])
        // The native API's warning, in the same words: nothing will be sent.
        let empty = (try? await AudienceCheck.isEmpty(job, store: store)) ?? false
        var object: [String: Any] = [
            "message_id": record.id, "state": record.state.rawValue,
            "payload_bytes": Self.sharedPayload(record.content, record.options.pushType, api.config).bytes.count,
        ]
        if empty { object["warnings"] = ["audience_empty"] }
        return .json(object: object, status: 202)
    }

    /// `DELETE /messages/{id}`: cancels a message not started yet (a scheduled push), as the
    /// native API's `DELETE /api/v1/messages/{id}` does; one already started answers 409.
    private func cancel(_ request: Request) async throws -> Response {
        let id = try request.adminID("message", "message")
        guard let gateway = api.gateway else {
            throw AdminError(503, "push_unavailable", "this gateway runs no delivery engine")
        }
        guard let status = try await gateway.status(messageID: id) else { throw AdminError.notFound("message") }
        guard try await gateway.cancel(messageID: id) else {
            throw AdminError(
                409, "not_scheduled",
                "message \(id) is \(status.state): only a message not started yet (scheduled, or queued) can be cancelled"
            )
        }
        api.logger.info("console: message cancelled", metadata: ["message": "\(id)"])
        return .json(object: ["message_id": id, "state": MessageState.cancelled.rawValue])
    }

    /// One service's body for the console: `{"channel", "display_name", "encoding", "body",
    /// "bytes", "skip_reason"}`.
    struct RenderedBody {
        var channel: PushChannel
        var object: [String: Any]
    }

    /// Each service's own body for this content, rendered by its transport's declared rendering
    /// (`TransportDeclaration.renderBody`); `channels` nil: every transport that renders one.
    /// The app's default credential of a service lends its ids (never its secret).
    func serviceBodies(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment?, appID: Int64, appName: String,
        token: String?, channels: Set<PushChannel>?
    ) async throws -> [RenderedBody] {
        let credentials = try await store.formCredentials(appID: appID)
        let now = api.clock.now
        return api.config.transports.registry.declarations.compactMap { declaration -> RenderedBody? in
            let channel = declaration.channel.channel
            guard let render = declaration.renderBody, channels?.contains(channel) ?? true else { return nil }
            let stored = credentials.first { $0.channel == channel && $0.selector == nil }
            let credential = ChannelCredential(
                id: stored?.id ?? 0, channel: channel, vendorAppID: stored?.vendorAppID ?? "",
                clientID: stored?.clientID ?? "", secret: [], options: stored?.options ?? [:])
            let body = render(
                ServiceBodyRequest(
                    content: content, headers: headers, environment: environment ?? .production, appName: appName,
                    token: token ?? "DEVICE_TOKEN", credential: credential, now: now))
            let text = body.body.map { String(decoding: $0.serialized(), as: UTF8.self) }
            return RenderedBody(
                channel: channel,
                object: [
                    "channel": channel.rawValue, "display_name": declaration.channel.displayName,
                    "encoding": body.encoding.rawValue, "body": orNull(text), "bytes": body.bytes,
                    "skip_reason": orNull(body.skipReason),
                ])
        }
    }

    /// The exact payload the push would carry to the service whose devices all get one
    /// (`TransportDeclaration.sharedPayload`), or why it cannot be sent; and `services`,
    /// each service's own body: for a token audience, the body for that device's service (the
    /// registered device's channel, else the channel that takes bare tokens when its rule accepts
    /// the token, `ChannelCatalog.bareTokenChannel`); otherwise every service's.
    private func preview(_ app: App, _ request: Request) async throws -> Response {
        let job = try await job(app, try AdminBody(request))
        var object: [String: Any]
        let payload = Self.sharedPayload(job.content, job.options.pushType, api.config)
        object = [
            "payload": String(decoding: payload.bytes, as: UTF8.self), "bytes": payload.bytes.count,
            "limit": payload.limit, "payload_channel": orNull(Self.sharedPayloadChannel(api.config)?.rawValue),
        ]
        if let error = payload.refusal {
            object["error"] = ["code": error.code.rawValue, "message": error.message]
        }
        var token: String?
        var channels: Set<PushChannel>?
        var environment = job.options.environment
        if case .tokens(let tokens) = job.audience, let raw = tokens.first, let addressed = DeviceToken(addressing: raw)
        {
            token = addressed.hex
            if let device = try await store.device(appID: app.id, token: addressed) {
                channels = [device.channel]
                environment = environment ?? device.environment
            } else if let bareTokenChannel = PushChannel.takingBareToken(raw) {
                channels = [bareTokenChannel]
            }
            object["channel"] = orNull(channels?.first?.rawValue)
        }
        object["services"] = try await serviceBodies(
            content: job.content, headers: PushHeaders(job.options, appID: app.id), environment: environment,
            appID: app.id, appName: app.name, token: token, channels: channels
        ).map(\.object)
        return .json(object: object)
    }

    /// `GET /messages?app=ID&limit=N`: the newest messages, live counts for those running.
    private func recent(_ request: Request) async throws -> Response {
        var appID: Int64?
        if let raw = request.query["app"], !raw.isEmpty {
            guard let id = Int64(raw), id > 0 else { throw AdminError.invalid("app", "app must be an app id") }
            appID = id
        }
        var limit = 20
        if let raw = request.query["limit"] {
            guard let value = Int(raw), (1...200).contains(value) else {
                throw AdminError.invalid("limit", "limit must be 1–200")
            }
            limit = value
        }
        var views: [[String: Any]] = []
        for record in try await store.messages(appID: appID, limit: limit) {
            let status = try await liveStatus(record)
            views.append(Self.view(status, detailed: false, config: api.config))
        }
        return .json(object: ["messages": views])
    }

    func status(_ id: Int64) async throws -> MessageStatus? {
        if let gateway = api.gateway { return try await gateway.status(messageID: id) }
        guard let record = try await store.message(id: id) else { return nil }
        var status = MessageStatus(record: record, counts: record.counts, failures: record.failures)
        if record.state == .completed, status.unfinished > 0 {
            status.pending = try await store.pendingDeliveries(messageID: id)
        }
        return status
    }

    /// Running messages get the engine's live counts; the rest are final in the store.
    func liveStatus(_ record: MessageRecord) async throws -> MessageStatus {
        if let gateway = api.gateway, record.state == .sending || record.state == .queued,
            let live = try await gateway.status(messageID: record.id)
        {
            return live
        }
        return MessageStatus(record: record, counts: record.counts, failures: record.failures)
    }

    /// A message's view with what its receipts say: `counts.arrived` and `counts.clicked`,
    /// `not_shown` by reason, and `channels` (committed counts per push service, with `arrived`
    /// and `clicked` on the channels whose services report arrival or where the app posted its
    /// own), as the native status shows them.
    func withReceipts(_ view: [String: Any], messageID: Int64) async throws -> [String: Any] {
        let receipts = try await store.receiptCounts(messageID: messageID)
        var fields: [String: JSONValue] = [:]
        if let counts = view["counts"].flatMap(JSONValue.init(jsonObject:)) { fields["counts"] = counts }
        MessageView.addReceipts(receipts, to: &fields)
        var object = view
        object["counts"] = fields["counts"]?.jsonObject ?? view["counts"]
        if let notShown = fields["not_shown"] { object["not_shown"] = notShown.jsonObject }
        if let appID = view["app_id"] as? Int64 ?? (view["app_id"] as? Int).map(Int64.init) {
            object["receipts_waiting"] = try await store.waitingReceiptStatuses(appID: appID)
        }
        object["channels"] = MessageView.channels(
            try await store.channelCounts(messageID: messageID), receipts: receipts,
            reporting: api.config.transports.registry.reportingArrival
        ).mapValues(\.jsonObject)
        return object
    }

    /// The payload the console shows of a message: the one its transports' services get alike
    /// (the first declaration's `sharedPayload`), empty when no transport of the registry has one.
    static func sharedPayload(_ content: PushContent, _ pushType: PushType, _ config: GatewayConfig) -> SharedPayload {
        guard let render = config.transports.registry.declarations.lazy.compactMap(\.sharedPayload).first else {
            return SharedPayload(bytes: [], limit: 0)
        }
        return render(content, pushType)
    }

    /// The channel whose transport renders `sharedPayload` (`payload_channel`): the console
    /// labels the payload, and tells it from a device's own service, by it rather than by name.
    static func sharedPayloadChannel(_ config: GatewayConfig) -> PushChannel? {
        config.transports.registry.declarations.first { $0.sharedPayload != nil }?.channel.channel
    }

    static func view(_ status: MessageStatus, detailed: Bool, config: GatewayConfig) -> [String: Any] {
        var object = MessageView.object(status)
        let record = status.record
        object["app_id"] = record.appID
        object["title"] = orNull(record.content.title)
        object["body"] = orNull(record.content.body)
        object["environment"] = orNull(record.options.environment?.rawValue)
        // The console shows the message as the service with one shared payload would carry it.
        let shared = sharedPayload(record.content, record.options.pushType, config)
        let payload = shared.bytes
        object["payload_bytes"] = payload.count
        object["payload_limit"] = shared.limit
        object["payload_channel"] = orNull(sharedPayloadChannel(config)?.rawValue)
        let c = status.counts
        // Held deliveries are not finished: a credential added before the message expires sends them.
        object["finished"] = c.delivered + c.failed + c.skipped
        if detailed {
            object["payload"] = String(decoding: payload, as: UTF8.self)
            object["labels"] = record.labels
        }
        return object
    }
}
