import Foundation
import TuisongCore
import TuisongHTTP

extension EasemobProvider {
    func pathGroup(_ call: Call) throws(EasemobError) -> String {
        let id = call.request.pathParameters["group"] ?? ""
        guard !id.isEmpty, id.utf8.count <= 64 else { throw .illegalArgument("group id is not valid") }
        return id
    }

    func createGroup(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let body = try call.body()
            let name = try body.requiredString("groupname")
            guard !name.isEmpty, name.count <= 128 else {
                throw EasemobError.illegalArgument("groupname must be 1–128 characters")
            }
            // `desc` and `approval` are the old API's names for `description` and `membersonly`.
            let description = try body.string("description") ?? body.string("desc") ?? ""
            guard description.count <= 512 else {
                throw EasemobError.illegalArgument("description must be at most 512 characters")
            }
            let owner = try EasemobUsername.validated(try body.requiredString("owner"))
            let members = try (body.strings("members") ?? []).map { name throws(EasemobError) in
                try EasemobUsername.validated(name)
            }
            guard members.count <= 100 else { throw EasemobError.illegalArgument("members can hold at most 100 users") }
            let maxUsers = try body.integer("maxusers") ?? 200
            guard (1...100_000).contains(maxUsers) else {
                throw EasemobError.illegalArgument("maxusers must be 1–100000")
            }
            let everyone = Array(Set(members + [owner]))
            let existing = try await store.existingUsers(appID: call.appID, among: everyone)
            if let missing = everyone.first(where: { !existing.contains($0) }) {
                throw EasemobError.illegalArgument("group member \(missing) doesn't exist")
            }
            let group = EasemobGroup(
                groupID: EasemobIDs.groupID(), name: name, description: description,
                isPublic: try body.bool("public") ?? true,
                membersOnly: try body.bool("membersonly") ?? body.bool("approval") ?? false,
                allowInvites: try body.bool("allowinvites") ?? false, maxUsers: Int(maxUsers), owner: owner,
                custom: try body.string("custom") ?? "", createdAt: SQLTime.milliseconds(call.now))
            try await store.createGroup(appID: call.appID, group, members: members)
            return call.success(entities: [], data: ["groupid": .string(group.groupID)])
        }
    }

    func getGroup(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            guard let found = try await store.group(appID: call.appID, groupID: id),
                let members = try await store.members(appID: call.appID, groupID: id)
            else { throw EasemobError.notFound() }
            let (group, count) = (found.group, found.memberCount)
            let affiliations: [JSONValue] = members.map { name in
                name == group.owner ? ["owner": .string(name)] : ["member": .string(name)]
            }
            let data: JSONValue = [
                "id": .string(group.groupID), "name": .string(group.name), "description": .string(group.description),
                "membersonly": .bool(group.membersOnly), "allowinvites": .bool(group.allowInvites),
                "maxusers": .int(Int64(group.maxUsers)), "owner": .string(group.owner),
                "created": .int(group.createdAt),
                "custom": .string(group.custom), "mute": false, "disabled": false, "public": .bool(group.isPublic),
                "affiliations_count": .int(Int64(count)), "affiliations": .array(affiliations),
            ]
            return call.success(data: [data], extra: ["count": 1])
        }
    }

    func updateGroup(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            let body = try call.body()
            if body.has("groupid") || body.has("owner") {
                throw EasemobError(
                    status: 400, error: "invalid_parameter", "some of [groupid, owner] are not valid fields")
            }
            var changes = EasemobGroupChanges()
            changes.name = try body.string("groupname")
            changes.description = try body.string("description") ?? body.string("desc")
            changes.isPublic = try body.bool("public")
            changes.membersOnly = try body.bool("membersonly") ?? body.bool("approval")
            changes.allowInvites = try body.bool("allowinvites")
            changes.maxUsers = try body.integer("maxusers").map(Int.init)
            changes.custom = try body.string("custom")
            if let name = changes.name, name.isEmpty || name.count > 128 {
                throw EasemobError.illegalArgument("groupname must be 1–128 characters")
            }
            guard try await store.updateGroup(appID: call.appID, groupID: id, changes) else {
                throw EasemobError.notFound()
            }
            var data: [String: JSONValue] = [:]
            for key in changes.changedKeys { data[key] = true }
            return call.success(entities: [], data: .object(data))
        }
    }

    func deleteGroup(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            guard try await store.deleteGroup(appID: call.appID, groupID: id) else { throw EasemobError.notFound() }
            return call.success(entities: [], data: ["success": true, "groupid": .string(id)])
        }
    }

    func listMembers(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            guard let group = try await store.group(appID: call.appID, groupID: id)?.group,
                let members = try await store.members(appID: call.appID, groupID: id)
            else { throw EasemobError.notFound() }
            let data: [JSONValue] = members.map { name in
                name == group.owner ? ["owner": .string(name)] : ["member": .string(name)]
            }
            return call.success(entities: [], data: .array(data), extra: ["count": .int(Int64(data.count))])
        }
    }

    func addMember(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            let username = try call.pathUser()
            _ = try call.body()
            guard try await store.existingUsers(appID: call.appID, among: [username]).contains(username) else {
                throw EasemobError.notFound()
            }
            guard let outcome = try await store.addMembers(appID: call.appID, groupID: id, [username], now: call.now)
            else { throw EasemobError.notFound() }
            if !outcome.already.isEmpty {
                throw EasemobError.forbidden(
                    "can not join this group, reason:user: \(username) already in group: \(id)")
            }
            return call.success(
                entities: [],
                data: ["result": true, "groupid": .string(id), "action": "add_member", "user": .string(username)])
        }
    }

    func addMembers(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            let body = try call.body()
            guard let names = try body.strings("usernames"), !names.isEmpty, names.count <= 60 else {
                throw EasemobError.illegalArgument("usernames must list 1 to 60 users")
            }
            let users = try names.map { name throws(EasemobError) in try EasemobUsername.validated(name) }
            let existing = try await store.existingUsers(appID: call.appID, among: users)
            if let missing = users.first(where: { !existing.contains($0) }) {
                throw EasemobError.illegalArgument("group member \(missing) doesn't exist")
            }
            guard let outcome = try await store.addMembers(appID: call.appID, groupID: id, users, now: call.now) else {
                throw EasemobError.notFound()
            }
            return call.success(
                entities: [],
                data: [
                    "newmembers": .array(outcome.added.map(JSONValue.string)), "groupid": .string(id),
                    "action": "add_member",
                ])
        }
    }

    func removeMember(_ request: Request) async -> Response {
        await serve(request, resource: "/chatgroups", access: .app) { call in
            let id = try pathGroup(call)
            let username = try call.pathUser()
            guard let removed = try await store.removeMember(appID: call.appID, groupID: id, username: username) else {
                throw EasemobError.notFound()
            }
            guard removed else {
                throw EasemobError.forbidden("users [\(username)] are not members of this group!")
            }
            return call.success(
                entities: [],
                data: ["result": true, "groupid": .string(id), "action": "remove_member", "user": .string(username)])
        }
    }
}
