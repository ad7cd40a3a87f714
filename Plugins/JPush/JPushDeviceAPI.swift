import Foundation
import TuisongCore
import TuisongHTTP

/// JPush's device API (`device.jpush.cn`): a device's tags, alias and mobile number by its
/// `registration_id`, the app's tags and aliases.
extension JPushProvider {
    static let tagsPerDeviceLimit = 1000

    /// The registered device behind a registration id; 7002 when the app has none.
    func registered(_ call: Call, _ registrationID: String) async throws -> (JPushDevice, Device) {
        guard JPushPayload.registrationIDProblem(registrationID) == nil,
            let registration = try await jpushStore.device(appID: call.app.id, registrationID: registrationID),
            let device = try await store.devices(appID: call.app.id, ids: [registration.deviceID]).first
        else { throw JPushError.unknownRegistrationID }
        return (registration, device)
    }

    static func token(_ device: Device) throws -> DeviceToken {
        guard let token = DeviceToken(device.token, channel: device.channel) else {
            throw JPushError.internalError("device \(device.id) token")
        }
        return token
    }

    /// `GET /v3/devices/{registration_id}`: `{"tags": [...], "alias": …, "mobile": …}` (null
    /// where unset, as JPush answers).
    func getDevice(_ call: Call) async throws -> Response {
        let (registration, device) = try await registered(call, call.pathParameter("registration_id"))
        let tags = try await jpushStore.tagNames(appID: call.app.id, deviceID: device.id)
        return JPushReply.ok([
            "tags": .array(tags.map(JSONValue.string)),
            "alias": registration.alias.map(JSONValue.string) ?? .null,
            "mobile": registration.mobile.map(JSONValue.string) ?? .null,
        ])
    }

    /// `POST /v3/devices/{registration_id}`: `{"tags": {"add": [...], "remove": [...]} | "",
    /// "alias": "a" | "", "mobile": "…" | ""}`; `""` clears.
    func updateDevice(_ call: Call) async throws -> Response {
        let (_, device) = try await registered(call, call.pathParameter("registration_id"))
        let body = try Self.object(call)
        let token = try Self.token(device)
        var alias: String??
        switch body["alias"] {
        case nil: alias = nil
        case .null?: alias = .some(nil)
        case .string(let text)?:
            if !text.isEmpty, let problem = JPushPayload.aliasProblem(text) {
                throw JPushError.deviceInvalid("alias \(problem)")
            }
            alias = .some(text)
        default: throw JPushError.deviceInvalid("alias must be a string")
        }
        var mobile: String??
        switch body["mobile"] {
        case nil: mobile = nil
        case .null?: mobile = .some(nil)
        case .string(let text)?:
            guard
                text.isEmpty
                    || (text.utf8.count <= 20 && text.utf8.allSatisfy({ (0x30...0x39).contains($0) || $0 == 0x2B }))
            else {
                throw JPushError.deviceInvalid("mobile must be a phone number (digits, an optional +)")
            }
            mobile = .some(text)
        default: throw JPushError.deviceInvalid("mobile must be a string")
        }
        var add: [TagName] = []
        var remove: [TagName] = []
        var clear = false
        switch body["tags"] {
        case nil, .null?: break
        case .string("")?: clear = true
        case .string(let one)?: add = try tagNames(.array([.string(one)]), "tags")
        case .object(let change)?:
            add = try tagNames(change["add"], "tags.add")
            remove = try tagNames(change["remove"], "tags.remove")
        default: throw JPushError.deviceInvalid("tags must be {\"add\": [...], \"remove\": [...]} or \"\"")
        }
        if clear {
            for name in try await jpushStore.tagNames(appID: call.app.id, deviceID: device.id) {
                if let tag = TagName(name) { _ = try await store.removeTag(appID: call.app.id, token: token, tag: tag) }
            }
        }
        for tag in remove { _ = try await store.removeTag(appID: call.app.id, token: token, tag: tag) }
        if !add.isEmpty {
            let current = try await jpushStore.tagNames(appID: call.app.id, deviceID: device.id)
            guard Set(current).union(add.map(\.value)).count <= Self.tagsPerDeviceLimit else {
                throw JPushError.tagLimit
            }
            for tag in add { try await store.addTag(appID: call.app.id, token: token, tag: tag) }
        }
        if alias != nil || mobile != nil {
            try await jpushStore.update(appID: call.app.id, deviceID: device.id, alias: alias, mobile: mobile)
        }
        return JPushReply.empty
    }

    func tagNames(_ value: JSONValue?, _ field: String) throws -> [TagName] {
        switch value {
        case nil, .null?: return []
        case .array(let items)?:
            guard items.count <= 100 else { throw JPushError.deviceInvalid("\(field) may name at most 100 tags") }
            return try items.map { item in
                guard let name = item.stringValue else {
                    throw JPushError.deviceInvalid("\(field) must be a list of strings")
                }
                if let problem = JPushPayload.tagProblem(name) {
                    throw JPushError.deviceInvalid("\(field) \"\(name.prefix(40))\" \(problem)")
                }
                guard let tag = TagName(name) else { throw JPushError.deviceInvalid("\(field) \"\(name.prefix(40))\"") }
                return tag
            }
        default: throw JPushError.deviceInvalid("\(field) must be a list of strings")
        }
    }

    /// `POST /v3/devices/status` `{"registration_ids": [...]}` (at most 1000): per id, whether
    /// it is online. Tuisong keeps no connection to a phone, so `online` is always false; the
    /// last time the device registered stands in for JPush's `last_online_time`.
    func deviceStatus(_ call: Call) async throws -> Response {
        let body = try Self.object(call)
        guard case .array(let items)? = body["registration_ids"] else {
            throw JPushError.deviceMissing("registration_ids")
        }
        guard !items.isEmpty, items.count <= 1000 else {
            throw JPushError.deviceInvalid("registration_ids: 1–1000 ids")
        }
        let ids = items.compactMap(\.stringValue)
        guard ids.count == items.count else { throw JPushError.deviceInvalid("registration_ids must be strings") }
        let found = try await jpushStore.devices(appID: call.app.id, registrationIDs: ids)
        let devices = try await store.devices(appID: call.app.id, ids: found.map(\.deviceID))
        let updated = Dictionary(devices.map { ($0.id, $0.updatedAt) }, uniquingKeysWith: { a, _ in a })
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "Asia/Shanghai")
        formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
        var answer: [String: JSONValue] = [:]
        for registration in found {
            var entry: [String: JSONValue] = ["online": false]
            if let date = updated[registration.deviceID] {
                entry["last_online_time"] = .string(formatter.string(from: date))
            }
            answer[registration.registrationID] = .object(entry)
        }
        if answer.isEmpty { throw JPushError.unknownRegistrationID }
        return JPushReply.ok(answer)
    }

    // MARK: Tags

    /// `GET /v3/tags`: `{"tags": [...]}`, the app's tags that a device carries.
    func listTags(_ call: Call) async throws -> Response {
        let names = try await jpushStore.tagNames(appID: call.app.id)
        return JPushReply.ok(["tags": .array(names.map(JSONValue.string))])
    }

    /// `GET /v3/tags/{tag}/registration_ids/{registration_id}`: `{"result": bool}`.
    func tagHasDevice(_ call: Call) async throws -> Response {
        let tag = call.pathParameter("tag")
        if let problem = JPushPayload.tagProblem(tag) { throw JPushError.deviceInvalid("tag \(problem)") }
        let (_, device) = try await registered(call, call.pathParameter("registration_id"))
        let result = try await jpushStore.deviceHasTag(appID: call.app.id, deviceID: device.id, tag: tag)
        return JPushReply.ok(["result": .bool(result)])
    }

    /// `POST /v3/tags/{tag}` `{"registration_ids": {"add": [...], "remove": [...]}}` (at most
    /// 1000 each).
    func updateTag(_ call: Call) async throws -> Response {
        let name = call.pathParameter("tag")
        if let problem = JPushPayload.tagProblem(name) { throw JPushError.deviceInvalid("tag \(problem)") }
        guard let tag = TagName(name) else { throw JPushError.deviceInvalid("tag") }
        let body = try Self.object(call)
        guard case .object(let change)? = body["registration_ids"] else {
            throw JPushError.deviceMissing("registration_ids {\"add\": [...], \"remove\": [...]}")
        }
        for (key, adding) in [("add", true), ("remove", false)] {
            guard let list = change[key], list != .null else { continue }
            guard case .array(let items) = list, items.count <= 1000 else {
                throw JPushError.deviceInvalid("registration_ids.\(key) must be a list of at most 1000 ids")
            }
            let ids = items.compactMap(\.stringValue)
            guard ids.count == items.count else {
                throw JPushError.deviceInvalid("registration_ids.\(key) must hold strings")
            }
            let found = try await jpushStore.devices(appID: call.app.id, registrationIDs: ids)
            guard found.count == Set(ids).count else { throw JPushError.unknownRegistrationID }
            let devices = try await store.devices(appID: call.app.id, ids: found.map(\.deviceID))
            for device in devices {
                let token = try Self.token(device)
                if adding {
                    try await store.addTag(appID: call.app.id, token: token, tag: tag)
                } else {
                    _ = try await store.removeTag(appID: call.app.id, token: token, tag: tag)
                }
            }
        }
        return JPushReply.empty
    }

    /// `DELETE /v3/tags/{tag}`: the tag leaves every device (`platform` is taken and ignored:
    /// a tag is the app's, whatever the platform).
    func deleteTag(_ call: Call) async throws -> Response {
        let tag = call.pathParameter("tag")
        if let problem = JPushPayload.tagProblem(tag) { throw JPushError.deviceInvalid("tag \(problem)") }
        guard try await jpushStore.deleteTag(appID: call.app.id, tag: tag) else {
            throw JPushError(400, 7008, "the tag does not exist")
        }
        return JPushReply.empty
    }

    // MARK: Aliases

    /// `GET /v3/aliases/{alias}`: `{"registration_ids": [...]}`.
    func aliasDevices(_ call: Call) async throws -> Response {
        let alias = call.pathParameter("alias")
        if let problem = JPushPayload.aliasProblem(alias) { throw JPushError.deviceInvalid("alias \(problem)") }
        let devices = try await jpushStore.devices(appID: call.app.id, alias: alias)
        return JPushReply.ok(["registration_ids": .array(devices.map { .string($0.registrationID) })])
    }

    /// `POST /v3/aliases/{alias}` `{"registration_ids": {"remove": [...]}}`: unbinds those
    /// devices from the alias.
    func unbindAlias(_ call: Call) async throws -> Response {
        let alias = call.pathParameter("alias")
        if let problem = JPushPayload.aliasProblem(alias) { throw JPushError.deviceInvalid("alias \(problem)") }
        let body = try Self.object(call)
        guard case .object(let change)? = body["registration_ids"], case .array(let items)? = change["remove"] else {
            throw JPushError.deviceMissing("registration_ids {\"remove\": [...]}")
        }
        let ids = items.compactMap(\.stringValue)
        guard ids.count == items.count, ids.count <= 1000 else {
            throw JPushError.deviceInvalid("registration_ids.remove must be at most 1000 strings")
        }
        for device in try await jpushStore.devices(appID: call.app.id, registrationIDs: ids) where device.alias == alias
        {
            try await jpushStore.update(appID: call.app.id, deviceID: device.deviceID, alias: .some(nil), mobile: nil)
        }
        return JPushReply.empty
    }

    /// `DELETE /v3/aliases/{alias}`: the alias leaves every device.
    func deleteAlias(_ call: Call) async throws -> Response {
        let alias = call.pathParameter("alias")
        if let problem = JPushPayload.aliasProblem(alias) { throw JPushError.deviceInvalid("alias \(problem)") }
        guard try await jpushStore.deleteAlias(appID: call.app.id, alias: alias) > 0 else {
            throw JPushError(400, 7008, "the alias does not exist")
        }
        return JPushReply.empty
    }
}
