import Foundation
import TuisongCore
import TuisongHTTP

/// A message accepted by one of the message calls, checked in Tencent's order before
/// anything is pushed.
struct TencentMessage: Sendable {
    var sender: String?
    var elements: [MessageElement]
    var pushInfo: OfflinePushInfo?
    /// `MsgLifeTime`: how long APNs may keep trying; 0 = online only (no offline push).
    var lifetime: Int
    var random: Int64
}

extension TencentProvider {
    static let defaultLifetime = 604_800

    /// `MsgRandom` (90005), `MsgLifeTime` (90026), `MsgBody` (90007 / 90002),
    /// `OfflinePushInfo`, `From_Account`.
    static func message(_ body: [String: JSONValue], randomKey: String = "MsgRandom") throws(TencentError)
        -> TencentMessage
    {
        guard let random = body[randomKey]?.intValue, random >= 0, random <= Int64(UInt32.max) else {
            if randomKey == "Random" { throw TencentError.invalidParameter("Random must be a 32-bit unsigned integer") }
            throw TencentError.msgRandomMissing
        }
        var lifetime = defaultLifetime
        if let value = body["MsgLifeTime"] {
            guard let seconds = value.intValue, seconds >= 0 else {
                throw TencentError(90026, "MsgLifeTime must be a number of seconds, 0–604800")
            }
            guard seconds <= Int64(defaultLifetime) else { throw TencentError.lifeTimeTooLong }
            lifetime = Int(seconds)
        }
        let elements = try MessageElement.parseBody(body["MsgBody"])
        let pushInfo = try OfflinePushInfo.parse(body["OfflinePushInfo"])
        var sender: String?
        if let from = body["From_Account"], from != .null {
            guard let account = from.stringValue, Account.isValid(account) else {
                throw TencentError.invalidParameter("From_Account must be an account")
            }
            sender = account
        }
        return TencentMessage(
            sender: sender, elements: elements, pushInfo: pushInfo, lifetime: lifetime, random: random)
    }

    /// Submits one Tuisong message for these accounts; `onlineOnly` keeps it from being pushed.
    func submit(
        _ message: TencentMessage, app: App, audience: Audience, origin: PushOrigin, vendorMessageID: String,
        call: TencentCommand, onlineOnly: Bool = false
    ) async throws -> MessageRecord {
        var template = OfflinePushTemplate(
            sender: message.sender, origin: origin, elements: message.elements, pushInfo: message.pushInfo)
        if template.suppressed == nil && (onlineOnly || message.lifetime == 0) { template.suppressed = "online_only" }
        template.androidIntent = Self.androidIntent(message.pushInfo, ext: template.ext, app: app)
        let now = clock.now
        let expiration = now.addingTimeInterval(TimeInterval(message.lifetime == 0 ? 60 : message.lifetime))
        var labels = ["call": call.rawValue]
        if let sender = message.sender { labels["from"] = sender }
        let job = PushJob(
            appID: app.id, vendor: Self.name, vendorMessageID: vendorMessageID, audience: audience,
            content: template.content(badge: nil),
            options: PushOptions(
                pushType: .alert, priority: .immediate, expiration: expiration,
                android: Self.androidOptions(message.pushInfo),
                services: message.pushInfo?.services ?? [:]),
            labels: labels, vendorContext: template.vendorContext)
        do {
            return try await gateway.submit(job)
        } catch let error as PayloadError {
            throw TencentError.badMsgBody(error.message)
        }
    }

    /// The message's Android settings: `AndroidInfo`.
    static func androidOptions(_ info: OfflinePushInfo?) -> AndroidOptions? {
        guard let options = info?.android, !options.isEmpty else { return nil }
        return options
    }

    /// The intent the app's Huawei notifications open (its `huawei_intent` setting, Tencent's
    /// console "open a page in the app"), `Ext` appended as the intent's `ext` string extra when
    /// `ExtAsHuaweiIntentParam` is 1 (0: `Ext` is only the message's `ext` data, which the app
    /// reads from the extras): an Android device's content's click (`PushContent.click`).
    static func androidIntent(_ info: OfflinePushInfo?, ext: String?, app: App) -> String? {
        guard let intent = app.vendorSettings[TencentKeys.vendor]?[TencentKeys.huaweiIntentKey], !intent.isEmpty
        else { return nil }
        if let ext, info?.extAsHuaweiIntentParam == true {
            return HuaweiIntent.appending(stringExtra: "ext", value: ext, to: intent)
        }
        return intent
    }

    /// A sender's nick (nil when the sender has none or there is no sender).
    func nick(app: App, _ account: String?) async throws -> String? {
        guard let account else { return nil }
        return try await tencentStore.nicks(appID: app.id, accounts: [account])[account]
    }

    // MARK: openim

    func sendMessage(_ call: TencentCall) async throws -> Response {
        guard let to = call.body["To_Account"]?.stringValue else { throw TencentError.toAccountMissing }
        let message = try Self.message(call.body)
        guard Account.isValid(to), !(try await accounts.existingAccounts(appID: call.app.id, among: [to])).isEmpty
        else { throw TencentError.accountNotFound(to) }
        let time = nowSeconds
        let key = "\(message.random)_\(UInt32.random(in: 1...UInt32.max))_\(time)"
        _ = try await submit(
            message, app: call.app, audience: .accounts([to]),
            origin: .oneToOne(senderNick: try await nick(app: call.app, message.sender)), vendorMessageID: key,
            call: .sendMessage)
        return TencentReply.ok(["MsgTime": .int(time), "MsgKey": .string(key)])
    }

    func batchSendMessage(_ call: TencentCall, rawBodySize: Int) async throws -> Response {
        guard case .array(let items)? = call.body["To_Account"] else { throw TencentError.toAccountMissing }
        var targets: [String] = []
        for item in items {
            guard let account = item.stringValue else { throw TencentError.toAccountMissing }
            targets.append(account)
        }
        guard !targets.isEmpty else { throw TencentError.toAccountMissing }
        guard targets.count <= 500 else { throw TencentError.tooManyTargets }
        // The 8 KB limit is on the message; the account list (up to 500 × 32 bytes) is extra.
        let listSize = JSONValue.array(items).serialized().count
        guard rawBodySize - listSize <= TencentBody.messageLimit else { throw TencentError.bodyTooLarge }
        let message = try Self.message(call.body)

        var seen = Set<String>()
        let unique = targets.filter { seen.insert($0).inserted }
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: unique.filter(Account.isValid))
        let known = unique.filter { existing.contains($0) }
        let errors: [JSONValue] = unique.filter { !existing.contains($0) }.map {
            ["To_Account": .string($0), "ErrorCode": .int(Int64(TencentError.accountNotFound($0).code))]
        }
        let time = nowSeconds
        var fields: [String: JSONValue] = [:]
        if !errors.isEmpty { fields["ErrorList"] = .array(errors) }
        if !known.isEmpty {
            let key = "\(message.random)_\(UInt32.random(in: 1...UInt32.max))_\(time)"
            _ = try await submit(
                message, app: call.app, audience: .accounts(known),
                origin: .oneToOne(senderNick: try await nick(app: call.app, message.sender)), vendorMessageID: key,
                call: .batchSendMessage)
            fields["MsgKey"] = .string(key)
        }
        return TencentReply.ok(fields)
    }

    // MARK: all_member_push

    func allMemberPush(_ call: TencentCall) async throws -> Response {
        let message = try Self.message(call.body)
        var audience = Audience.allAccounts
        if let condition = call.body["Condition"], condition != .null {
            guard case .object(let members) = condition else {
                throw TencentError.badPushRequest("Condition must be an object")
            }
            let all = try Self.tagList(members["TagsAnd"], "Condition.TagsAnd")
            let any = try Self.tagList(members["TagsOr"], "Condition.TagsOr")
            guard members["AttrsAnd"] == nil, members["AttrsOr"] == nil else {
                throw TencentError.badPushRequest("account attributes (AttrsAnd/AttrsOr) are not supported; use tags")
            }
            guard all.isEmpty || any.isEmpty else {
                throw TencentError.badPushRequest("Condition may hold TagsAnd or TagsOr, not both")
            }
            if !all.isEmpty {
                audience = .accounts(try await tencentStore.accounts(appID: call.app.id, allOf: all))
            } else if !any.isEmpty {
                audience = .accounts(try await tencentStore.accounts(appID: call.app.id, anyOf: any))
            }
        }
        let sender = message.sender ?? call.keys.adminIdentifier
        var withSender = message
        withSender.sender = sender
        let taskID = "\(UInt64.random(in: 1...UInt64(Int64.max)))"
        _ = try await submit(
            withSender, app: call.app, audience: audience,
            origin: .broadcast(senderNick: try await nick(app: call.app, message.sender)), vendorMessageID: taskID,
            call: .allMemberPush)
        return TencentReply.ok(["TaskId": .string(taskID)])
    }

    static func tagList(_ value: JSONValue?, _ name: String) throws(TencentError) -> [String] {
        guard let value, value != .null else { return [] }
        guard let items = value.arrayValue, items.count <= 10 else {
            throw TencentError.badPushRequest("\(name) must be an array of at most 10 tags")
        }
        var tags: [String] = []
        for item in items {
            guard let tag = item.stringValue, !tag.isEmpty, tag.utf8.count <= 50 else {
                throw TencentError.badPushRequest("\(name) items must be tags of 1–50 bytes")
            }
            tags.append(tag)
        }
        return tags
    }

    /// `im_set_tag` / `im_remove_tag`: `{"UserTags":[{"To_Account":…,"Tags":[…]}]}`.
    func setTags(_ call: TencentCall, add: Bool) async throws -> Response {
        guard let items = call.body["UserTags"]?.arrayValue, !items.isEmpty, items.count <= 500 else {
            throw TencentError.badPushRequest("UserTags must be an array of 1–500 items")
        }
        var changes: [(String, [String])] = []
        for item in items {
            guard let account = item["To_Account"]?.stringValue, Account.isValid(account) else {
                throw TencentError.badPushRequest("each UserTags item needs a To_Account")
            }
            changes.append((account, try Self.tagList(item["Tags"], "UserTags.Tags")))
        }
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: changes.map(\.0))
        if let missing = changes.first(where: { !existing.contains($0.0) }) {
            throw TencentError.accountNotFound(missing.0)
        }
        for (account, tags) in changes {
            if add {
                try await tencentStore.addTags(appID: call.app.id, account: account, tags: tags)
            } else {
                try await tencentStore.removeTags(appID: call.app.id, account: account, tags: tags)
            }
        }
        return TencentReply.ok()
    }

    func getTags(_ call: TencentCall) async throws -> Response {
        let names = try Self.stringArray(
            call.body["To_Account"], "To_Account", limit: 100, code: TencentError.toAccountMissing)
        let tags = try await tencentStore.tags(appID: call.app.id, accounts: names)
        return TencentReply.ok([
            "UserTags": .array(
                names.map { ["To_Account": .string($0), "Tags": .array((tags[$0] ?? []).map(JSONValue.string))] })
        ])
    }
}
