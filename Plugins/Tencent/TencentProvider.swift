import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin

/// Tencent Cloud IM (腾讯云通信) server REST API v4 and its iOS offline push, at Tencent's own
/// paths so an app server written against Tencent's SDKs only changes its host:
///
/// - `/v4/<service>/<command>?sdkappid=&identifier=&usersig=&random=&contenttype=json`,
///   authenticated with a UserSig v2 under the app's secret key; server calls need the
///   app's administrator identifier.
/// - `/v4/offline_push/{set_token|report_background|report_foreground|set_config}`: what
///   Tencent's iOS SDK reports (seed 003), authenticated by the user's own UserSig.
///
/// Every answer is HTTP 200 with Tencent's envelope (`TencentReply`). Messages become one
/// Tuisong message each, pushed per receiver by `TencentDeliveryPolicy` with seed 003's
/// rendering (`OfflinePushTemplate`).
public struct TencentProvider: PushProvider {
    public static let name = "tencent"
    public static let displayName = LocalizedText(en: "Tencent Cloud IM", zh: "腾讯云通信 IM")

    /// A certificate's busiId: devices report it with their token (`BusiId`) and are sent
    /// through the credential carrying it. `tuisong credential add --busi-id N`.
    public static let credentialSelector: CredentialSelectorDeclaration? = CredentialSelectorDeclaration(
        cliFlag: "busi-id",
        help: "Tencent IM: the certificate's busiId; devices reporting this BusiId are sent through it.",
        // The device API takes a BusiId as a 32-bit unsigned integer: a larger one would never match.
        problem: { value in
            value.utf8.allSatisfy { (48...57).contains($0) } && UInt32(value) != nil
                ? nil : "must be a number from 0 to \(UInt32.max) (the certificate's busiId)"
        })
    public static var migrations: [PluginMigration] { TencentSchema.migrations }
    public static var settings: [VendorSetting] { TencentKeys.settings }
    public static var deviceColumns: [DeviceColumn] {
        [
            DeviceColumn(key: "identifier", label: LocalizedText(en: "Tencent identifier", zh: "腾讯 IM 帐号")),
            DeviceColumn(key: "busi_id", label: LocalizedText(en: "BusiId", zh: "证书 BusiId")),
        ]
    }

    let context: ProviderContext
    let tencentStore: TencentStore
    let policy: TencentDeliveryPolicy
    let verifiedSigs = VerifiedUserSigs()
    /// Apps by SDKAppID with their secret keys opened: a chat message's call neither reads its
    /// app nor opens the key again (`OpenedApps`: forgotten when the app changes).
    let openedApps: OpenedApps<Int64, (app: App, keys: TencentKeys)>

    public init(context: ProviderContext) throws {
        // Tencent has no settings of its own in the config file (yet): a section may be empty.
        try ProviderConfigSection.read(context.configuration, provider: Self.name) { _, _ in false }
        self.context = context
        tencentStore = TencentStore(database: context.database)
        policy = TencentDeliveryPolicy(store: tencentStore, accounts: context.accounts)
        openedApps = OpenedApps(clock: context.clock, changes: context.appChanges)
    }

    public var deliveryPolicy: (any DeliveryPolicy)? { policy }

    /// A device's Tencent identifier and BusiId, for apps configured for Tencent (an Easemob
    /// app's devices are bound to accounts too, but not through Tencent).
    public func deviceColumnValues(appID: Int64, deviceIDs: [Int64]) async throws -> [Int64: [String: String]] {
        guard try await store.app(id: appID)?.vendorSettings[TencentKeys.vendor] != nil else { return [:] }
        var values: [Int64: [String: String]] = [:]
        for id in deviceIDs {
            guard let device = try await store.device(id: id), device.appID == appID else { continue }
            var columns: [String: String] = [:]
            if let account = device.imAccount { columns["identifier"] = account }
            if let selector = device.credentialSelector { columns["busi_id"] = selector }
            if !columns.isEmpty { values[id] = columns }
        }
        return values
    }

    /// The largest body accepted at all; message calls stop at 8 KB (93000) themselves, but a
    /// batchsendmsg naming 500 accounts needs more room for its account list.
    static let bodyLimit = 64 * 1024

    public func register(on router: Router) {
        // `/v4` and everything under it is Tencent's, errors (404, 405, 413) included.
        router.addGroup(
            name: Self.name, claims: { $0 == "/v4" || $0.hasPrefix("/v4/") },
            errorResponder: TencentReply.errorResponder
        ) { group in
            for method in [HTTPMethod.POST, .GET] {
                group.add(method, "/v4/{service}/{command}", bodyLimit: Self.bodyLimit) { request in
                    await handle(request)
                }
            }
        }
    }

    var store: any ProviderStore { context.store }
    var accounts: any AccountStore { context.accounts }
    var gateway: any PushGateway { context.gateway }
    var clock: any TuisongCore.Clock { context.clock }
    var logger: Logger { context.logger }
    var nowSeconds: Int64 { Int64(clock.now.timeIntervalSince1970.rounded(.down)) }

    // MARK: One call

    func handle(_ request: Request) async -> Response {
        let service = request.pathParameters["service"] ?? ""
        let commandName = request.pathParameters["command"] ?? ""
        do {
            guard let command = TencentCommand(rawValue: "\(service)/\(commandName)") else {
                throw TencentError.unknownCommand(request.path)
            }
            let parameters = try TencentCallParameters.parse(request.query)
            let caller = try await authenticate(parameters)
            if command.isServerCall, caller.identifier != caller.keys.adminIdentifier { throw TencentError.needsAdmin }
            if command.isMessageCall, command != .batchSendMessage, request.body.count > TencentBody.messageLimit {
                throw TencentError.bodyTooLarge
            }
            let body = try TencentBody.parse(request.body)
            let call = TencentCall(app: caller.app, keys: caller.keys, identifier: caller.identifier, body: body)
            // Before the call counts anything (a group's message sequence, badges).
            if command.isMessageCall { try await gateway.admit(appID: caller.app.id) }
            return try await perform(command, call, rawBodySize: request.body.count)
        } catch let error as TencentError {
            return TencentReply.fail(error)
        } catch let error as BacklogFull {
            var response = TencentReply.fail(TencentError(backlogFull: error))
            response.headers.add(name: "Retry-After", value: String(error.retryAfterSeconds))
            return response
        } catch let error as StoreError where error.code == .unavailable {
            logger.warning("tencent: store unavailable", metadata: ["path": "\(request.path)", "error": "\(error)"])
            return TencentReply.fail(TencentError(storeUnavailable: error))
        } catch {
            let reference = UUID().uuidString.prefix(8)
            logger.error(
                "tencent: request failed",
                metadata: ["path": "\(request.path)", "reference": "\(reference)", "error": "\(error)"])
            return TencentReply.fail(.internalError(String(reference)))
        }
    }

    private func perform(_ command: TencentCommand, _ call: TencentCall, rawBodySize: Int) async throws -> Response {
        switch command {
        case .accountImport: return try await accountImport(call)
        case .multiAccountImport: return try await multiAccountImport(call)
        case .accountDelete: return try await accountDelete(call)
        case .accountCheck: return try await accountCheck(call)
        case .portraitSet: return try await portraitSet(call)
        case .portraitGet: return try await portraitGet(call)
        case .queryState: return try await queryState(call)
        case .sendMessage: return try await sendMessage(call)
        case .batchSendMessage: return try await batchSendMessage(call, rawBodySize: rawBodySize)
        case .createGroup: return try await createGroup(call)
        case .addGroupMember: return try await addGroupMember(call)
        case .deleteGroupMember: return try await deleteGroupMember(call)
        case .modifyGroupMemberInfo: return try await modifyGroupMemberInfo(call)
        case .getGroupInfo: return try await getGroupInfo(call)
        case .sendGroupMessage: return try await sendGroupMessage(call)
        case .allMemberPush: return try await allMemberPush(call)
        case .setTag: return try await setTags(call, add: true)
        case .removeTag: return try await setTags(call, add: false)
        case .getTag: return try await getTags(call)
        case .setToken: return try await setToken(call)
        case .reportBackground: return try await reportBackground(call)
        case .reportForeground: return try await reportForeground(call)
        case .setConfig: return try await setConfig(call)
        }
    }

    // MARK: Authentication

    struct Caller {
        var app: App
        var keys: TencentKeys
        var identifier: String
    }

    /// Finds the app by SDKAppID (60006 when none has it) and verifies the UserSig.
    func authenticate(_ parameters: TencentCallParameters) async throws -> Caller {
        let sdkAppID = parameters.sdkAppID
        guard let opened = try await openedApps.value(for: sdkAppID, load: { try await openApp(sdkAppID) }) else {
            throw TencentError.unknownSDKAppID(String(sdkAppID))
        }
        _ = try verifiedSigs.verify(
            parameters.userSig, identifier: parameters.identifier, sdkAppID: sdkAppID,
            secretKey: opened.keys.secretKey, now: clock.now)
        return Caller(app: opened.app, keys: opened.keys, identifier: parameters.identifier)
    }

    /// The app with this SDKAppID and its keys opened; nil when no app has it.
    private func openApp(_ sdkAppID: Int64) async throws -> (appID: Int64, value: (app: App, keys: TencentKeys))? {
        // One point lookup: SDKAppIDs are stored in their one spelling (no leading zeros).
        guard let app = try await store.app(vendor: TencentKeys.vendor, setting: "sdkappid", value: String(sdkAppID))
        else { return nil }
        do {
            guard let keys = try TencentKeys.of(app, sealer: context.secrets) else { return nil }
            return (app.id, (app, keys))
        } catch {
            logger.error(
                "tencent: an app's secret key cannot be opened", metadata: ["app": "\(app.id)", "error": "\(error)"])
            throw TencentError.internalError("app \(app.id) key")
        }
    }
}

/// The commands served under `/v4/`.
enum TencentCommand: String, CaseIterable, Sendable {
    case accountImport = "im_open_login_svc/account_import"
    case multiAccountImport = "im_open_login_svc/multiaccount_import"
    case accountDelete = "im_open_login_svc/account_delete"
    case accountCheck = "im_open_login_svc/account_check"
    case portraitSet = "profile/portrait_set"
    case portraitGet = "profile/portrait_get"
    case queryState = "openim/querystate"
    case sendMessage = "openim/sendmsg"
    case batchSendMessage = "openim/batchsendmsg"
    case createGroup = "group_open_http_svc/create_group"
    case addGroupMember = "group_open_http_svc/add_group_member"
    case deleteGroupMember = "group_open_http_svc/delete_group_member"
    case modifyGroupMemberInfo = "group_open_http_svc/modify_group_member_info"
    case getGroupInfo = "group_open_http_svc/get_group_info"
    case sendGroupMessage = "group_open_http_svc/send_group_msg"
    case allMemberPush = "all_member_push/im_push"
    case setTag = "all_member_push/im_set_tag"
    case removeTag = "all_member_push/im_remove_tag"
    case getTag = "all_member_push/im_get_tag"
    case setToken = "offline_push/set_token"
    case reportBackground = "offline_push/report_background"
    case reportForeground = "offline_push/report_foreground"
    case setConfig = "offline_push/set_config"

    /// Device-side calls act for the identifier that signed them; all others are the app
    /// server's and need the administrator.
    var isServerCall: Bool { !rawValue.hasPrefix("offline_push/") }

    /// Calls carrying a message, limited to 8 KB (93000).
    var isMessageCall: Bool {
        switch self {
        case .sendMessage, .batchSendMessage, .sendGroupMessage, .allMemberPush: true
        default: false
        }
    }
}

/// One authenticated call.
struct TencentCall: Sendable {
    var app: App
    var keys: TencentKeys
    var identifier: String
    var body: [String: JSONValue]
}
