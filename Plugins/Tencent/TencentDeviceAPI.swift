import Foundation
import TuisongCore
import TuisongHTTP

/// What Tencent's iOS SDK reports for offline push (seed 003: setToken, doBackground,
/// doForeground, and the per-user push config), each authenticated by the user's own UserSig
/// and acting on that identifier.
extension TencentProvider {
    /// 70402 as the account service answers a bad parameter.
    static func badDeviceParameter(_ detail: String) -> TencentError {
        TencentError(70402, "invalid parameter: \(detail)")
    }

    /// `{"Token":"…","BusiId":N,"Environment":"production"|"sandbox"}`. The token is bound to
    /// the identifier (the same token again is the same device). BusiId names the certificate
    /// the token belongs to, as in Tencent's console: the app's Android credential with that
    /// selector makes the device an Android one of that credential's service (FCM, Huawei,
    /// Honor) and the token that service's; otherwise it is an APNs token, sent through the
    /// app's APNs credential with that selector (0 or none: the app's default one).
    func setToken(_ call: TencentCall) async throws -> Response {
        guard let raw = call.body["Token"]?.stringValue, !raw.isEmpty else {
            throw Self.badDeviceParameter("Token is required (the device's push token)")
        }
        var selector: String?
        if let busi = call.body["BusiId"], busi != .null {
            guard let id = busi.intValue, id >= 0, id <= Int64(UInt32.max) else {
                throw Self.badDeviceParameter("BusiId must be the certificate's id, a 32-bit unsigned integer")
            }
            selector = id == 0 ? nil : String(id)
        }
        var channel: PushChannel?
        if let selector { channel = try await store.channel(appID: call.app.id, selector: selector) }
        let token: DeviceToken
        var environment = PushEnvironment.production
        if let channel, channel.isAndroid {
            guard let android = DeviceToken(raw, channel: channel) else {
                throw Self.badDeviceParameter(
                    "Token must be a \(channel) push token (BusiId \(selector ?? "") is the app's \(channel) certificate)"
                )
            }
            token = android
        } else {
            // The SDK formats NSData as "<a1b2 c3d4 …>"; accept that shape too.
            let hex = String(raw.unicodeScalars.filter { !" <>".unicodeScalars.contains($0) })
            guard let apns = DeviceToken(hex) else {
                throw Self.badDeviceParameter("Token must be an APNs device token (64–200 hex digits)")
            }
            token = apns
            switch call.body["Environment"]?.stringValue?.lowercased() {
            case nil, "production", "product", "prod": environment = .production
            case "sandbox", "development", "dev": environment = .sandbox
            case let other?:
                throw Self.badDeviceParameter("Environment must be production or sandbox, got \(other.prefix(20))")
            }
        }
        guard Account.isValid(call.identifier) else { throw Self.badDeviceParameter("identifier is not an account") }
        _ = try await accounts.bindDevice(
            appID: call.app.id, account: call.identifier,
            registration: DeviceRegistration(token: token, environment: environment, channel: channel ?? .apns),
            credentialSelector: selector)
        return TencentReply.ok()
    }

    /// `{"C2CUnread":N}`: the app went to the background; N becomes the badge counter.
    func reportBackground(_ call: TencentCall) async throws -> Response {
        var unread: Int?
        if let value = call.body["C2CUnread"] ?? call.body["UnreadCount"], value != .null {
            guard let count = value.intValue, count >= 0, count <= 1_000_000 else {
                throw Self.badDeviceParameter("C2CUnread must be a count of 0 or more")
            }
            unread = Int(count)
        }
        try await accounts.setAppState(appID: call.app.id, account: call.identifier, .background)
        if let unread { try await accounts.setBadge(appID: call.app.id, account: call.identifier, to: unread) }
        return TencentReply.ok()
    }

    /// `{}`: the app is on screen; it gets nothing until it reports the background again.
    func reportForeground(_ call: TencentCall) async throws -> Response {
        try await accounts.setAppState(appID: call.app.id, account: call.identifier, .foreground)
        return TencentReply.ok()
    }

    /// `{"OpenPush":0|1|2}`: 0 keeps the setting, 1 turns offline push on, 2 off.
    func setConfig(_ call: TencentCall) async throws -> Response {
        let value = call.body["OpenPush"]?.intValue ?? 0
        guard let openPush = OpenPush(rawValue: Int(clamping: value)) else {
            throw Self.badDeviceParameter("OpenPush must be 0 (keep), 1 (on) or 2 (off)")
        }
        if openPush != .keep {
            try await accounts.createAccount(appID: call.app.id, account: call.identifier)
            try await tencentStore.setOpenPush(appID: call.app.id, account: call.identifier, enabled: openPush == .on)
        }
        return TencentReply.ok()
    }
}

/// Per receiver: seed 003's rules (`OfflinePushRules`) and the badge. Pushed accounts get
/// their counter incremented once per message, in one store call per page
/// (`AccountStore.grantBadges`), which remembers which accounts the message counted: a page
/// decided again or an account whose devices fall on two pages is not counted twice (it
/// carries the account's counter as it is then).
///
/// An Android device (`Recipient.channel`) gets the same alert, title and ext but none of
/// ApnsInfo's overrides (`OfflinePushTemplate.content(badge:android:)`). ApnsInfo's
/// BadgeMode is iOS's too: a message with BadgeMode 1 still counts for an account it pushes
/// on an Android device, and that device carries the counter; its iOS devices do not.
struct TencentDeliveryPolicy: DeliveryPolicy {
    let store: TencentStore
    let accounts: any AccountStore

    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision] {
        guard let template = OfflinePushTemplate(vendorContext: message.vendorContext) else {
            return recipients.map { _ in .send }
        }
        if let suppressed = template.suppressed { return recipients.map { _ in .skip(reason: suppressed) } }
        let disabled = try await store.pushDisabled(appID: message.appID, accounts: recipients.compactMap(\.account))
        let reasons = recipients.map { recipient in
            OfflinePushRules.skipReason(
                suppressed: nil, account: recipient.account, sender: template.sender,
                pushDisabled: recipient.account.map { disabled.contains($0) } ?? false, appState: recipient.appState)
        }
        var memo = AndroidStyleMemo()
        let android = recipients.map { memo.isAndroid($0.channel) }
        func counts(_ index: Int) -> Bool { template.countsBadge || android[index] }
        var pushed: [AccountKey] = []
        var seen = Set<Int64>()
        for (index, recipient) in recipients.enumerated() where reasons[index] == nil && counts(index) {
            if let account = recipient.accountKey, seen.insert(account.id).inserted { pushed.append(account) }
        }
        let badges =
            pushed.isEmpty
            ? [:] : try await accounts.grantBadges(appID: message.appID, messageID: message.id, accounts: pushed)
        // Made once per distinct badge and platform, not per receiver: a page's badges take few
        // values, and equal contents then share one rendering per transport.
        struct Shape: Hashable {
            var badge: Int?
            var android: Bool
        }
        var made: [Shape: PushContent] = [:]
        return recipients.enumerated().map { index, recipient in
            if let reason = reasons[index] { return .skip(reason: reason) }
            let shape = Shape(
                badge: counts(index) ? recipient.account.flatMap { badges[$0] } : nil, android: android[index])
            if let content = made[shape] { return .sendContent(content) }
            let content = template.content(badge: shape.badge, android: shape.android)
            made[shape] = content
            return .sendContent(content)
        }
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
