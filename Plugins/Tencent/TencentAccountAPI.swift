import Foundation
import TuisongCore
import TuisongHTTP

/// Account, profile and state calls of the server API.
extension TencentProvider {
    /// 70402: Tencent's "invalid parameter" of the account service.
    static func invalidAccountParameter(_ detail: String) -> TencentError {
        TencentError(70402, "invalid parameter: \(detail)")
    }

    /// An account field (`UserID`, or the older `Identifier`) that must name a valid account.
    static func accountField(_ body: [String: JSONValue], _ keys: [String]) throws(TencentError) -> String {
        for key in keys {
            guard let value = body[key] else { continue }
            guard let account = value.stringValue else { throw invalidAccountParameter("\(key) must be a string") }
            if let problem = Account.problem(account) { throw invalidAccountParameter("\(key) \(problem)") }
            return account
        }
        throw invalidAccountParameter("\(keys[0]) is required")
    }

    /// `[{"UserID": …}]` items of `key` (each may also be a bare string).
    static func accountItems(_ body: [String: JSONValue], _ key: String, limit: Int) throws(TencentError) -> [String] {
        guard let items = body[key]?.arrayValue else { throw invalidAccountParameter("\(key) must be an array") }
        guard items.count <= limit else { throw invalidAccountParameter("\(key) holds more than \(limit) items") }
        var accounts: [String] = []
        for item in items {
            if let account = item.stringValue ?? item["UserID"]?.stringValue ?? item["Identifier"]?.stringValue {
                accounts.append(account)
            } else {
                throw invalidAccountParameter("\(key) items must be {\"UserID\": string}")
            }
        }
        return accounts
    }

    static func stringArray(_ value: JSONValue?, _ name: String, limit: Int, code: TencentError) throws(TencentError)
        -> [String]
    {
        guard let items = value?.arrayValue else { throw code }
        var strings: [String] = []
        for item in items {
            guard let text = item.stringValue else { throw code }
            strings.append(text)
        }
        guard strings.count <= limit else { throw invalidAccountParameter("\(name) holds more than \(limit) items") }
        return strings
    }

    func accountImport(_ call: TencentCall) async throws -> Response {
        let account = try Self.accountField(call.body, ["UserID", "Identifier"])
        var items: [(tag: String, value: JSONValue)] = []
        if let nick = call.body["Nick"] {
            guard case .string = nick else { throw Self.invalidAccountParameter("Nick must be a string") }
            items.append((TencentStore.nickTag, nick))
        }
        if let face = call.body["FaceUrl"] {
            guard case .string = face else { throw Self.invalidAccountParameter("FaceUrl must be a string") }
            items.append(("Tag_Profile_IM_Image", face))
        }
        try await accounts.createAccount(appID: call.app.id, account: account)
        if !items.isEmpty { try await tencentStore.setProfile(appID: call.app.id, account: account, items: items) }
        return TencentReply.ok()
    }

    func multiAccountImport(_ call: TencentCall) async throws -> Response {
        let names = try Self.stringArray(
            call.body["Accounts"], "Accounts", limit: 100,
            code: Self.invalidAccountParameter("Accounts must be an array of strings"))
        var failed: [JSONValue] = []
        for name in names {
            if Account.isValid(name) {
                try await accounts.createAccount(appID: call.app.id, account: name)
            } else {
                failed.append(.string(name))
            }
        }
        return TencentReply.ok(["FailAccounts": .array(failed)])
    }

    func accountDelete(_ call: TencentCall) async throws -> Response {
        let names = try Self.accountItems(call.body, "DeleteItem", limit: 100)
        var results: [JSONValue] = []
        for name in names {
            let deleted =
                Account.isValid(name) ? try await accounts.deleteAccount(appID: call.app.id, account: name) : false
            if deleted { try await tencentStore.deleteAccountData(appID: call.app.id, account: name) }
            let error = deleted ? nil : TencentError.notImported(name)
            results.append([
                "UserID": .string(name), "ResultCode": .int(Int64(error?.code ?? 0)),
                "ResultInfo": .string(error?.info ?? ""),
            ])
        }
        return TencentReply.ok(["ResultItem": .array(results)])
    }

    func accountCheck(_ call: TencentCall) async throws -> Response {
        let names = try Self.accountItems(call.body, "CheckItem", limit: 100)
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: names.filter(Account.isValid))
        return TencentReply.ok([
            "ResultItem": .array(
                names.map { name in
                    [
                        "UserID": .string(name), "ResultCode": 0, "ResultInfo": "",
                        "AccountStatus": existing.contains(name) ? "Imported" : "NotImported",
                    ]
                })
        ])
    }

    // MARK: Profiles

    func portraitSet(_ call: TencentCall) async throws -> Response {
        guard let account = call.body["From_Account"]?.stringValue, Account.isValid(account) else {
            throw TencentError.badProfileRequest("From_Account must be an account")
        }
        guard let items = call.body["ProfileItem"]?.arrayValue, !items.isEmpty else {
            throw TencentError.badProfileRequest("ProfileItem must be a non-empty array")
        }
        var parsed: [(tag: String, value: JSONValue)] = []
        for item in items {
            guard let tag = item["Tag"]?.stringValue, tag.hasPrefix("Tag_Profile_"), tag.utf8.count <= 128,
                let value = item["Value"], value != .null
            else {
                throw TencentError.badProfileRequest("each ProfileItem needs a Tag_Profile_… Tag and a Value")
            }
            if tag == TencentStore.nickTag, value.stringValue == nil {
                throw TencentError.badProfileRequest("\(tag) must be a string")
            }
            parsed.append((tag, value))
        }
        guard !(try await accounts.existingAccounts(appID: call.app.id, among: [account])).isEmpty else {
            throw TencentError(40003, "account \(account) does not exist")
        }
        try await tencentStore.setProfile(appID: call.app.id, account: account, items: parsed)
        return TencentReply.ok(["ErrorDisplay": ""])
    }

    func portraitGet(_ call: TencentCall) async throws -> Response {
        let names = try Self.stringArray(
            call.body["To_Account"], "To_Account", limit: 100,
            code: TencentError.badProfileRequest("To_Account must be an array of strings"))
        let tags = try Self.stringArray(
            call.body["TagList"], "TagList", limit: 100,
            code: TencentError.badProfileRequest("TagList must be an array of strings"))
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: names.filter(Account.isValid))
        let profiles = try await tencentStore.profiles(appID: call.app.id, accounts: Array(existing), tags: tags)
        var fail: [JSONValue] = []
        let items: [JSONValue] = names.map { name in
            guard existing.contains(name) else {
                fail.append(.string(name))
                return [
                    "To_Account": .string(name), "ProfileItem": [], "ResultCode": 40003,
                    "ResultInfo": .string("account \(name) does not exist"),
                ]
            }
            let profile = profiles[name] ?? [:]
            return [
                "To_Account": .string(name), "ResultCode": 0, "ResultInfo": "",
                "ProfileItem": .array(
                    tags.compactMap { tag in profile[tag].map { ["Tag": .string(tag), "Value": $0] } }),
            ]
        }
        return TencentReply.ok(["UserProfileItem": .array(items), "FailAccount": .array(fail), "ErrorDisplay": ""])
    }

    // MARK: State

    /// Online = app in the foreground, PushOnline = in the background (offline push on),
    /// Offline = never reported.
    func queryState(_ call: TencentCall) async throws -> Response {
        let names = try Self.stringArray(
            call.body["To_Account"], "To_Account", limit: 500, code: TencentError.toAccountMissing)
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: names.filter(Account.isValid))
        var results: [JSONValue] = []
        var errors: [JSONValue] = []
        for name in names {
            guard existing.contains(name) else {
                errors.append(["To_Account": .string(name), "ErrorCode": 70107])
                continue
            }
            let state: String
            switch try await accounts.appState(appID: call.app.id, account: name) {
            case .foreground?: state = "Online"
            case .background?: state = "PushOnline"
            case nil: state = "Offline"
            }
            results.append(["To_Account": .string(name), "State": .string(state), "Status": .string(state)])
        }
        var fields: [String: JSONValue] = ["QueryResult": .array(results)]
        if !errors.isEmpty { fields["ErrorList"] = .array(errors) }
        return TencentReply.ok(fields)
    }
}
