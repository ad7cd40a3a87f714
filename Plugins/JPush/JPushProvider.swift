import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin

/// JPush (极光推送) REST API v3 at JPush's own paths, so an app server written against JPush's
/// server SDKs changes only its hosts (`api.jpush.cn`, `device.jpush.cn` and
/// `report.jpush.cn` all become Tuisong's one listener; their paths do not collide):
///
/// - `/v3/push`, `/v3/push/validate`, `/v3/push/cid`, `/v3/push/batch/{regid|alias}/single`;
/// - `/v3/devices/…`, `/v3/tags/…`, `/v3/aliases/…` (tags are the core's, the
///   `registration_id`, alias and mobile number JPush's own, in `jpush_registrations`);
/// - `/v3/received`, `/v3/received/detail`, `/v3/messages`, `/v3/status/message`, from the
///   core's counts and the services' receipts;
/// - `/v3/schedules`: each push of a schedule (single or periodical) is a scheduled message (`send_at`).
///
/// Every call is HTTP Basic `appKey:masterSecret`. Every error is JPush's
/// `{"error": {"code", "message"}}` with its HTTP status (`JPushError`). A device gets its
/// `registration_id` from the native device API (`deviceRegistered`). docs/jpush.md.
public struct JPushProvider: PushProvider {
    public static let name = "jpush"
    public static let displayName = LocalizedText(en: "JPush", zh: "极光推送 JPush")
    public static var migrations: [PluginMigration] { JPushSchema.migrations }
    public static var settings: [VendorSetting] { JPushKeys.settings }
    public static var deviceColumns: [DeviceColumn] {
        [
            DeviceColumn(
                key: "registration_id", label: LocalizedText(en: "JPush registration_id", zh: "极光 registration_id")),
            DeviceColumn(key: "alias", label: LocalizedText(en: "JPush alias", zh: "极光别名")),
        ]
    }
    /// `badge` is what JPush's `setBadge` reported: the badge a `"+1"` push counts from.
    public static var deviceFields: [String] { ["registration_id", "badge"] }

    let context: ProviderContext
    let jpushStore: JPushStore
    let policy: JPushDeliveryPolicy

    public init(context: ProviderContext) throws {
        try ProviderConfigSection.read(context.configuration, provider: Self.name) { _, _ in false }
        self.context = context
        jpushStore = JPushStore(database: context.database, store: context.store, clock: context.clock)
        policy = JPushDeliveryPolicy(jpushStore: jpushStore)
    }

    public var deliveryPolicy: (any DeliveryPolicy)? { policy }

    var store: any ProviderStore { context.store }
    var gateway: any PushGateway { context.gateway }
    var logger: Logger { context.logger }
    var now: Date { context.clock.now }

    public func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        guard try await store.app(id: appID)?.vendorSettings[JPushKeys.vendor] != nil else { return [:] }
        var values: [Int64: [String: String]] = [:]
        for id in deviceIDs {
            guard let device = try await jpushStore.device(appID: appID, deviceID: id) else { continue }
            var columns = ["registration_id": device.registrationID]
            if let alias = device.alias { columns["alias"] = alias }
            values[id] = columns
        }
        return values
    }

    /// The native device API registered or updated `device`: an app with JPush settings gives
    /// it a `registration_id` (the one the body brings, the id it had under JPush, when no
    /// other device of the app holds it), and keeps the `badge` the body reports (what the app
    /// called JPush's `setBadge` with).
    public func deviceRegistered(
        app: App, device: Device, fields: [String: JSONValue]
    ) async throws -> [String: JSONValue] {
        let requested: String?
        switch fields["registration_id"] {
        case nil, .null?: requested = nil
        case .string(let id)?:
            if let problem = JPushPayload.registrationIDProblem(id) {
                throw ProviderFieldError(status: 400, code: "invalid_registration_id", "registration_id \(problem)")
            }
            requested = id
        default:
            throw ProviderFieldError(status: 400, code: "invalid_registration_id", "registration_id must be a string")
        }
        let badge: Int?
        switch fields["badge"] {
        case nil, .null?: badge = nil
        case .int(let value)? where value >= 0 && value <= Int64(JPushBadge.largest): badge = Int(value)
        default:
            throw ProviderFieldError(
                status: 400, code: "invalid_badge", "badge must be a number 0–99999 (what the app shows now)")
        }
        guard app.vendorSettings[JPushKeys.vendor] != nil else {
            if let given = requested != nil ? "registration_id" : badge != nil ? "badge" : nil {
                throw ProviderFieldError(
                    status: 400, code: "jpush_not_configured",
                    "\(given) is JPush's; this app has no JPush settings (tuisong app set-jpush)")
            }
            return [:]
        }
        var answer: [String: JSONValue]
        switch try await jpushStore.register(appID: app.id, deviceID: device.id, requested: requested) {
        case .registered(let id): answer = ["registration_id": .string(id)]
        case .taken:
            throw ProviderFieldError(
                status: 409, code: "registration_id_taken", "another device of this app holds that registration_id")
        }
        if let badge {
            try await jpushStore.setBadge(deviceID: device.id, to: badge)
            answer["badge"] = .int(Int64(badge))
        }
        return answer
    }

    static let bodyLimit = 64 * 1024

    public func register(on router: Router) {
        // `/v3` and everything under it is JPush's, errors (404, 405, 413) included.
        router.addGroup(
            name: Self.name, claims: { $0 == "/v3" || $0.hasPrefix("/v3/") }, errorResponder: JPushReply.errorResponder
        ) { group in
            func add(
                _ method: HTTPMethod, _ path: String, _ handler: @escaping @Sendable (Call) async throws -> Response
            ) {
                group.add(method, path, bodyLimit: Self.bodyLimit) { request in await serve(request, handler) }
            }
            add(.POST, "/v3/push") { try await push($0, validateOnly: false) }
            add(.POST, "/v3/push/validate") { try await push($0, validateOnly: true) }
            add(.GET, "/v3/push/cid") { try await cids($0) }
            add(.POST, "/v3/push/batch/regid/single") { try await batchSingle($0, byAlias: false) }
            add(.POST, "/v3/push/batch/alias/single") { try await batchSingle($0, byAlias: true) }
            add(.POST, "/v3/devices/status") { try await deviceStatus($0) }
            add(.GET, "/v3/devices/{registration_id}") { try await getDevice($0) }
            add(.POST, "/v3/devices/{registration_id}") { try await updateDevice($0) }
            add(.GET, "/v3/tags") { try await listTags($0) }
            add(.GET, "/v3/tags/") { try await listTags($0) }
            add(.GET, "/v3/tags/{tag}/registration_ids/{registration_id}") { try await tagHasDevice($0) }
            add(.POST, "/v3/tags/{tag}") { try await updateTag($0) }
            add(.DELETE, "/v3/tags/{tag}") { try await deleteTag($0) }
            add(.GET, "/v3/aliases/{alias}") { try await aliasDevices($0) }
            add(.POST, "/v3/aliases/{alias}") { try await unbindAlias($0) }
            add(.DELETE, "/v3/aliases/{alias}") { try await deleteAlias($0) }
            add(.GET, "/v3/received") { try await received($0, detailed: false) }
            add(.GET, "/v3/received/detail") { try await received($0, detailed: true) }
            add(.GET, "/v3/messages") { try await messages($0) }
            add(.POST, "/v3/status/message") { try await messageStatus($0) }
            add(.POST, "/v3/schedules") { try await createSchedule($0) }
            add(.GET, "/v3/schedules") { try await listSchedules($0) }
            add(.GET, "/v3/schedules/{schedule_id}") { try await getSchedule($0) }
            add(.GET, "/v3/schedules/{schedule_id}/msg_ids") { try await scheduleMessageIDs($0) }
            add(.PUT, "/v3/schedules/{schedule_id}") { try await updateSchedule($0) }
            add(.DELETE, "/v3/schedules/{schedule_id}") { try await deleteSchedule($0) }
        }
    }

    /// One authenticated call.
    struct Call: Sendable {
        var app: App
        var request: Request

        func pathParameter(_ name: String) -> String { request.pathParameters[name] ?? "" }
    }

    func serve(_ request: Request, _ handler: @Sendable (Call) async throws -> Response) async -> Response {
        do {
            let app = try await authenticate(request)
            return try await handler(Call(app: app, request: request))
        } catch let error as JPushError {
            return JPushReply.fail(error)
        } catch let error as BacklogFull {
            // The app's backlog is at the gateway's bound: JPush's own rate-limit answer.
            return JPushReply.fail(
                JPushError(429, 2002, error.explanation, retryAfter: error.retryAfterSeconds))
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning("jpush: store unavailable", metadata: ["path": "\(request.path)", "error": "\(error)"])
            return JPushReply.fail(JPushError(storeUnavailable: error))
        } catch let error as PayloadError {
            return JPushReply.fail(.invalid("\(error)"))
        } catch {
            let reference = UUID().uuidString.prefix(8)
            logger.error(
                "jpush: request failed",
                metadata: ["path": "\(request.path)", "reference": "\(reference)", "error": "\(error)"])
            return JPushReply.fail(.internalError(String(reference)))
        }
    }

    // MARK: Authentication

    /// HTTP Basic `appKey:masterSecret`: the app by its AppKey, the secret compared in
    /// constant time. 401 (1004) for anything else, without saying which half was wrong.
    func authenticate(_ request: Request) async throws -> App {
        guard let header = request.headers["Authorization"], header.count > 6,
            header.prefix(6).lowercased() == "basic ",
            let decoded = Data(base64Encoded: String(header.dropFirst(6)).trimmingCharacters(in: .whitespaces)),
            let text = String(data: decoded, encoding: .utf8), let colon = text.firstIndex(of: ":")
        else { throw JPushError.authenticationFailed }
        let appKey = String(text[..<colon])
        let secret = String(text[text.index(after: colon)...])
        guard JPushKeys.keyProblem(appKey) == nil, let app = try await jpushStore.app(appKey: appKey) else {
            throw JPushError.authenticationFailed
        }
        let keys: JPushKeys
        do {
            guard let opened = try JPushKeys.of(app, sealer: context.secrets) else {
                throw JPushError.authenticationFailed
            }
            keys = opened
        } catch let error as JPushError {
            throw error
        } catch {
            logger.error("jpush: an app's master secret cannot be opened", metadata: ["app": "\(app.id)"])
            throw JPushError.internalError("app \(app.id) key")
        }
        guard Self.constantTimeEquals(Array(secret.utf8), Array(keys.masterSecret.utf8)) else {
            throw JPushError.authenticationFailed
        }
        return app
    }

    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }

    // MARK: Bodies

    static func object(_ call: Call) throws(JPushError) -> [String: JSONValue] {
        guard !call.request.body.isEmpty else { throw .missing("the request body") }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: call.request.body)
        } catch {
            throw .invalid("the body is not JSON: \(error)")
        }
        guard case .object(let object) = value else { throw .invalid("the body must be a JSON object") }
        return object
    }

    /// `msg_ids=1,2,3` (JPush: at most 100).
    static func messageIDs(_ call: Call) throws(JPushError) -> [Int64] {
        guard let text = call.request.query["msg_ids"], !text.isEmpty else { throw .reportMissing("msg_ids") }
        let parts = text.split(separator: ",", omittingEmptySubsequences: true).map {
            $0.trimmingCharacters(in: .whitespaces)
        }
        guard parts.count <= 100 else { throw .reportInvalid("msg_ids: at most 100") }
        var ids: [Int64] = []
        for part in parts {
            guard let id = Int64(part), id > 0 else {
                throw .reportInvalid("msg_ids: \"\(part.prefix(24))\" is not a msg_id")
            }
            ids.append(id)
        }
        return ids
    }
}
