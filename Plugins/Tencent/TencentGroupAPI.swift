import Foundation
import TuisongCore
import TuisongHTTP

/// Group calls of the server API (`group_open_http_svc`).
extension TencentProvider {
    static let groupTypes: Set<String> = [
        "Private", "Public", "ChatRoom", "AVChatRoom", "Community", "Work", "Meeting",
    ]

    /// `GroupId`: 1–48 bytes of printable ASCII; ids Tuisong makes start with `@TGS#`, which a
    /// custom id may not (10015 as Tencent answers).
    static func groupID(_ body: [String: JSONValue], custom: Bool = false) throws(TencentError) -> String {
        guard let id = body["GroupId"]?.stringValue, !id.isEmpty else {
            throw TencentError.invalidParameter("GroupId is required")
        }
        guard id.utf8.count <= 48, id.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw TencentError(10015, "GroupId must be 1–48 printable ASCII characters")
        }
        if custom, id.hasPrefix("@TGS#") { throw TencentError(10015, "a custom GroupId may not start with @TGS#") }
        return id
    }

    func existingGroup(app: App, _ groupID: String) async throws -> TencentGroup {
        guard let group = try await tencentStore.group(appID: app.id, groupID: groupID) else {
            throw TencentError.groupNotFound(groupID)
        }
        return group
    }

    func createGroup(_ call: TencentCall) async throws -> Response {
        guard let type = call.body["Type"]?.stringValue, Self.groupTypes.contains(type) else {
            throw TencentError.invalidParameter(
                "Type must be one of \(Self.groupTypes.sorted().joined(separator: ", "))")
        }
        guard let name = call.body["Name"]?.stringValue, !name.isEmpty, name.utf8.count <= 100 else {
            throw TencentError.invalidParameter("Name must be 1–100 bytes")
        }
        var owner: String?
        if let value = call.body["Owner_Account"], value != .null {
            guard let account = value.stringValue, Account.isValid(account) else {
                throw TencentError.invalidParameter("Owner_Account must be an account")
            }
            owner = account
        }
        var members: [(account: String, nameCard: String?)] = []
        if let list = call.body["MemberList"], list != .null {
            guard let items = list.arrayValue, items.count <= 500 else {
                throw TencentError.invalidParameter("MemberList must be an array of at most 500 members")
            }
            for item in items {
                guard let account = item["Member_Account"]?.stringValue, Account.isValid(account) else {
                    throw TencentError.invalidParameter("each MemberList item needs a Member_Account")
                }
                members.append((account, item["NameCard"]?.stringValue))
            }
        }
        let named = members.map(\.account) + (owner.map { [$0] } ?? [])
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: named)
        if let missing = named.first(where: { !existing.contains($0) }) {
            throw TencentError(10019, "account \(missing) does not exist")
        }
        let custom = call.body["GroupId"].map { $0 != .null } ?? false
        var attempts = 0
        while true {
            attempts += 1
            let groupID = custom ? try Self.groupID(call.body, custom: true) : Self.newGroupID()
            if try await tencentStore.createGroup(
                appID: call.app.id, groupID: groupID, type: type, name: name, owner: owner, members: members,
                now: nowSeconds)
            {
                return TencentReply.ok(["GroupId": .string(groupID)])
            }
            if custom || attempts >= 3 { throw TencentError.groupIDTaken(groupID) }
        }
    }

    /// `@TGS#` and 9 random letters and digits, the shape of Tencent's own group ids.
    static func newGroupID() -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
        return "@TGS#" + String((0..<9).map { _ in alphabet.randomElement()! })
    }

    func addGroupMember(_ call: TencentCall) async throws -> Response {
        let groupID = try Self.groupID(call.body)
        guard let items = call.body["MemberList"]?.arrayValue, !items.isEmpty, items.count <= 500 else {
            throw TencentError.invalidParameter("MemberList must be an array of 1–500 members")
        }
        var names: [String] = []
        for item in items {
            guard let account = item["Member_Account"]?.stringValue else {
                throw TencentError.invalidParameter("each MemberList item needs a Member_Account")
            }
            names.append(account)
        }
        _ = try await existingGroup(app: call.app, groupID)
        let existing = try await accounts.existingAccounts(appID: call.app.id, among: names.filter(Account.isValid))
        let added = try await tencentStore.addMembers(
            appID: call.app.id, groupID: groupID, accounts: names.filter { existing.contains($0) }, now: nowSeconds)
        // Result: 0 failed (no such account), 1 added, 2 already a member.
        var reported = Set<String>()
        let results: [JSONValue] = names.map { name in
            let result: Int64 =
                !existing.contains(name) ? 0 : (added.contains(name) && reported.insert(name).inserted ? 1 : 2)
            return ["Member_Account": .string(name), "Result": .int(result)]
        }
        return TencentReply.ok(["MemberList": .array(results)])
    }

    func deleteGroupMember(_ call: TencentCall) async throws -> Response {
        let groupID = try Self.groupID(call.body)
        var names: [String] = []
        if let list = call.body["MemberToDel_Account"] {
            names = try Self.stringArray(
                list, "MemberToDel_Account", limit: 500,
                code: TencentError.invalidParameter("MemberToDel_Account must be an array of accounts"))
        } else if let items = call.body["MemberList"]?.arrayValue {
            names = items.compactMap { $0["Member_Account"]?.stringValue ?? $0.stringValue }
        }
        guard !names.isEmpty else { throw TencentError.invalidParameter("MemberToDel_Account is required") }
        _ = try await existingGroup(app: call.app, groupID)
        let removed = try await tencentStore.deleteMembers(appID: call.app.id, groupID: groupID, accounts: names)
        // Result 1: removed; 0: was not a member.
        return TencentReply.ok([
            "MemberList": .array(
                names.map { ["Member_Account": .string($0), "Result": removed.contains($0) ? 1 : 0] })
        ])
    }

    func modifyGroupMemberInfo(_ call: TencentCall) async throws -> Response {
        let groupID = try Self.groupID(call.body)
        guard let account = call.body["Member_Account"]?.stringValue else {
            throw TencentError.invalidParameter("Member_Account is required")
        }
        _ = try await existingGroup(app: call.app, groupID)
        if let card = call.body["NameCard"] {
            guard let text = card.stringValue, text.utf8.count <= 50 else {
                throw TencentError.invalidParameter("NameCard must be a string of at most 50 bytes")
            }
            guard
                try await tencentStore.setNameCard(
                    appID: call.app.id, groupID: groupID, account: account, nameCard: text)
            else { throw TencentError(10007, "\(account) is not a member of group \(groupID)") }
        } else {
            guard try await tencentStore.member(appID: call.app.id, groupID: groupID, account: account).isMember else {
                throw TencentError(10007, "\(account) is not a member of group \(groupID)")
            }
        }
        return TencentReply.ok()
    }

    func getGroupInfo(_ call: TencentCall) async throws -> Response {
        let ids = try Self.stringArray(
            call.body["GroupIdList"], "GroupIdList", limit: 50,
            code: TencentError.invalidParameter("GroupIdList must be an array of group ids"))
        var infos: [JSONValue] = []
        for id in ids {
            if let group = try await tencentStore.group(appID: call.app.id, groupID: id) {
                var info: [String: JSONValue] = [
                    "GroupId": .string(group.groupID), "ErrorCode": 0, "ErrorInfo": "", "Type": .string(group.type),
                    "Name": .string(group.name), "CreateTime": .int(group.createdAt),
                    "MemberNum": .int(Int64(group.memberCount)), "MaxMemberNum": 6000,
                ]
                if let owner = group.owner { info["Owner_Account"] = .string(owner) }
                infos.append(.object(info))
            } else {
                let error = TencentError.groupNotFound(id)
                infos.append([
                    "GroupId": .string(id), "ErrorCode": .int(Int64(error.code)), "ErrorInfo": .string(error.info),
                ])
            }
        }
        return TencentReply.ok(["GroupInfo": .array(infos)])
    }

    /// Answers as soon as the message is durable; the dispatcher fans it out to the members'
    /// devices page by page.
    func sendGroupMessage(_ call: TencentCall) async throws -> Response {
        let groupID = try Self.groupID(call.body)
        let message = try Self.message(call.body, randomKey: call.body["Random"] != nil ? "Random" : "MsgRandom")
        let onlineOnly = call.body["OnlineOnlyFlag"]?.intValue == 1
        let group = try await existingGroup(app: call.app, groupID)
        var senderName: String?
        if let sender = message.sender {
            let membership = try await tencentStore.member(appID: call.app.id, groupID: groupID, account: sender)
            guard membership.isMember else {
                throw TencentError(10007, "\(sender) is not a member of group \(groupID)")
            }
            if let card = membership.nameCard {
                senderName = card
            } else {
                senderName = try await nick(app: call.app, sender) ?? sender
            }
        }
        let members = try await tencentStore.memberAccounts(appID: call.app.id, groupID: groupID)
        guard let sequence = try await tencentStore.nextMessageSequence(appID: call.app.id, groupID: groupID) else {
            throw TencentError.groupNotFound(groupID)
        }
        let time = nowSeconds
        _ = try await submit(
            message, app: call.app, audience: .accounts(members),
            origin: .group(senderName: senderName, groupName: group.name),
            vendorMessageID: "\(groupID)#\(sequence)", call: .sendGroupMessage, onlineOnly: onlineOnly)
        return TencentReply.ok(["MsgTime": .int(time), "MsgSeq": .int(sequence)])
    }
}
