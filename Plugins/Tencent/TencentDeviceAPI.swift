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
/// their counter incremented once per message, in one store call for the pages decided
/// together (`AccountStore.grantBadges(_:)`), which remembers which accounts the message counted: a page
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
        try await decide(pages: [PolicyPage(recipients: recipients, message: message)])[0].get()
    }

    /// The pages' push switches are read once per app, and their badges granted in one store
    /// call (a chat load's messages each count one receiver: a read and a write for all of
    /// them, not one each; issue #47). A failed read or grant fails the pages that needed it.
    func decide(pages: [PolicyPage]) async -> [Result<[DeliveryDecision], any Error>] {
        let templates = pages.map { OfflinePushTemplate(vendorContext: $0.message.vendorContext) }
        var results = [Result<[DeliveryDecision], any Error>?](repeating: nil, count: pages.count)
        // In the pages' order, repeats and all (the read keeps each account's first): one page's
        // accounts go to the read exactly as that page lists them, in audience order, which
        // SQLite's `IN` list is built from fastest.
        var accountsByApp: [Int64: [String]] = [:]
        for (index, page) in pages.enumerated() {
            guard let template = templates[index] else {
                results[index] = .success(page.recipients.map { _ in .send })
                continue
            }
            if let suppressed = template.suppressed {
                results[index] = .success(page.recipients.map { _ in .skip(reason: suppressed) })
                continue
            }
            accountsByApp[page.message.appID, default: []].append(contentsOf: page.recipients.compactMap(\.account))
        }
        var disabled: [Int64: Result<Set<String>, any Error>] = [:]
        for (appID, accounts) in accountsByApp {
            do {
                disabled[appID] = .success(try await store.pushDisabled(appID: appID, accounts: accounts))
            } catch {
                disabled[appID] = .failure(error)
            }
        }
        var pending: [PendingPage] = []
        for (index, page) in pages.enumerated() where results[index] == nil {
            guard let template = templates[index], let read = disabled[page.message.appID] else { continue }
            switch read {
            case .failure(let error): results[index] = .failure(error)
            case .success(let disabled):
                pending.append(PendingPage(index: index, page: page, template: template, disabled: disabled))
            }
        }
        let granting = pending.filter { !$0.pushed.isEmpty }
        var badges: [Int: [String: Int]] = [:]
        if !granting.isEmpty {
            do {
                let answers = try await accounts.grantBadges(
                    granting.map {
                        BadgeGrantRequest(
                            appID: $0.page.message.appID, messageID: $0.page.message.id, accounts: $0.pushed)
                    })
                for (page, answer) in zip(granting, answers) { badges[page.index] = answer }
            } catch {
                for page in granting { results[page.index] = .failure(error) }
            }
        }
        for page in pending where results[page.index] == nil {
            results[page.index] = .success(page.decisions(badges: badges[page.index] ?? [:]))
        }
        return results.map { $0 ?? .failure(StoreError(.unavailable, "a page was not decided")) }
    }

    /// A page whose receivers' rules were read: who is skipped, and whose badge it counts.
    struct PendingPage {
        let index: Int
        let page: PolicyPage
        let template: OfflinePushTemplate
        let reasons: [String?]
        let android: [Bool]
        /// The accounts the page counts a badge for, each once.
        let pushed: [AccountKey]

        init(index: Int, page: PolicyPage, template: OfflinePushTemplate, disabled: Set<String>) {
            self.index = index
            self.page = page
            self.template = template
            let reasons = page.recipients.map { recipient in
                OfflinePushRules.skipReason(
                    suppressed: nil, account: recipient.account, sender: template.sender,
                    pushDisabled: recipient.account.map { disabled.contains($0) } ?? false,
                    appState: recipient.appState)
            }
            var memo = AndroidStyleMemo()
            let android = page.recipients.map { memo.isAndroid($0.channel) }
            var pushed: [AccountKey] = []
            var seen = Set<Int64>()
            for (index, recipient) in page.recipients.enumerated()
            where reasons[index] == nil && (template.countsBadge || android[index]) {
                if let account = recipient.accountKey, seen.insert(account.id).inserted { pushed.append(account) }
            }
            self.reasons = reasons
            self.android = android
            self.pushed = pushed
        }

        func decisions(badges: [String: Int]) -> [DeliveryDecision] {
            // Made once per distinct badge and platform, not per receiver: a page's badges take
            // few values, and equal contents then share one rendering per transport.
            struct Shape: Hashable {
                var badge: Int?
                var android: Bool
            }
            var made: [Shape: PushContent] = [:]
            return page.recipients.enumerated().map { index, recipient in
                if let reason = reasons[index] { return .skip(reason: reason) }
                let counts = template.countsBadge || android[index]
                let shape = Shape(
                    badge: counts ? recipient.account.flatMap { badges[$0] } : nil, android: android[index])
                if let content = made[shape] { return .sendContent(content) }
                let content = template.content(badge: shape.badge, android: shape.android)
                made[shape] = content
                return .sendContent(content)
            }
        }
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
