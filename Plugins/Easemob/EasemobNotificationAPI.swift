import Foundation
import TuisongCore
import TuisongHTTP

extension EasemobProvider {
    // MARK: Push modes and do-not-disturb

    /// `{chattype}/{key}`: `user` + a username (the user itself = the app level) or
    /// `chatgroup` + a group id.
    func conversation(_ call: Call) throws(EasemobError) -> (chatType: String, key: String) {
        let chatType = call.request.pathParameters["chattype"] ?? ""
        let key = call.request.pathParameters["key"] ?? ""
        switch chatType {
        case "user": return (chatType, try EasemobUsername.validated(key))
        case "chatgroup":
            guard !key.isEmpty, key.utf8.count <= 64 else { throw .illegalArgument("key must be a group id") }
            return (chatType, key)
        default:
            throw .illegalArgument("chattype must be user or chatgroup, got \(chatType.prefix(40))")
        }
    }

    func setNotification(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let user = try await existingUser(call)
            let (chatType, key) = try conversation(call)
            let body = try call.body()
            var setting =
                try await store.notificationSetting(
                    appID: call.appID, username: user.username, chatType: chatType, key: key)
                ?? EasemobNotificationSetting()
            if let type = try body.string("type") {
                guard let mode = EasemobPushMode(rawValue: type) else {
                    throw EasemobError.illegalArgument("type must be DEFAULT, ALL, AT or NONE, got \(type.prefix(20))")
                }
                setting.mode = mode
            }
            if let text = try body.string("ignoreInterval") {
                if text.isEmpty {
                    setting.ignoreInterval = nil
                } else {
                    guard let interval = EasemobDailyInterval(parsing: text) else {
                        throw EasemobError.illegalArgument("ignoreInterval must be HH:MM-HH:MM, got \(text.prefix(20))")
                    }
                    setting.ignoreInterval = interval
                }
            }
            if let duration = try body.integer("ignoreDuration") {
                guard (0...EasemobNotificationSetting.maxIgnoreDurationMillis).contains(duration) else {
                    throw EasemobError.illegalArgument("ignoreDuration must be 0–604800000 milliseconds")
                }
                setting.ignoreUntil = duration == 0 ? nil : call.now.addingTimeInterval(Double(duration) / 1000)
            }
            try await store.setNotificationSetting(
                appID: call.appID, username: user.username, chatType: chatType, key: key, setting, now: call.now)
            return call.success(data: Self.settingData(setting, now: call.now))
        }
    }

    func getNotification(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let user = try await existingUser(call)
            let (chatType, key) = try conversation(call)
            let setting =
                try await store.notificationSetting(
                    appID: call.appID, username: user.username, chatType: chatType, key: key)
                ?? EasemobNotificationSetting()
            return call.success(data: Self.settingData(setting, now: call.now))
        }
    }

    /// Easemob's `data{type, ignoreInterval, ignoreDuration}`: the duration as the instant it
    /// ends (epoch ms, as Easemob answers), 0 when none is running.
    static func settingData(_ setting: EasemobNotificationSetting, now: Date) -> JSONValue {
        let until = setting.ignoreUntil.flatMap { $0 > now ? SQLTime.milliseconds($0) : nil } ?? 0
        return [
            "type": .string(setting.mode.rawValue),
            "ignoreInterval": .string(setting.ignoreInterval?.description ?? ""),
            "ignoreDuration": .int(until),
        ]
    }

    // MARK: Language

    func setLanguage(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let username = try call.pathUser()
            let body = try call.body()
            guard body.has("translationLanguage"), let language = try body.string("translationLanguage") else {
                throw EasemobError.illegalArgument("translationLanguage is required (\"\" for none)")
            }
            guard language.utf8.count <= 35 else {
                throw EasemobError.illegalArgument("translationLanguage must be a language code")
            }
            guard try await store.setLanguage(appID: call.appID, username: username, language: language, now: call.now)
            else { throw EasemobError.notFound() }
            return call.success(data: ["language": .string(language)])
        }
    }

    func getLanguage(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let user = try await existingUser(call)
            return call.success(data: ["language": .string(user.language ?? "")])
        }
    }

    // MARK: Templates (the app's core templates)

    func templateData(_ call: Call, _ template: PushTemplate) async throws -> JSONValue {
        let stamp = try await store.stamp(appID: call.appID, template, now: call.now)
        return [
            "name": .string(template.name), "title_pattern": .string(template.titlePattern),
            "content_pattern": .string(template.bodyPattern), "createAt": .int(stamp.createAt),
            "updateAt": .int(stamp.updateAt),
        ]
    }

    func createTemplate(_ request: Request) async -> Response {
        await serve(request, resource: "/notification/template", access: .app) { call in
            let body = try call.body()
            let name = try body.requiredString("name")
            let title = try body.requiredString("title_pattern")
            let content = try body.requiredString("content_pattern")
            guard !name.isEmpty, name.count <= 64 else {
                throw EasemobError.illegalArgument("name must be 1–64 characters")
            }
            guard title.count <= 1024, content.count <= 1024 else {
                throw EasemobError.illegalArgument("title_pattern and content_pattern must be at most 1024 characters")
            }
            let templates = self.templates
            let template: PushTemplate
            do {
                template = try await templates.createTemplate(
                    appID: call.appID, name: name, titlePattern: title, bodyPattern: content)
            } catch let error as StoreError where error.code == .conflict {
                throw EasemobError.illegalArgument("a template named \(name) exists already")
            }
            return call.success(data: try await templateData(call, template))
        }
    }

    func getTemplate(_ request: Request) async -> Response {
        await serve(request, resource: "/notification/template", access: .app) { call in
            let name = request.pathParameters["name"] ?? ""
            guard let template = try await templates.template(appID: call.appID, name: name) else {
                throw EasemobError.notFound()
            }
            return call.success(data: try await templateData(call, template))
        }
    }

    func deleteTemplate(_ request: Request) async -> Response {
        await serve(request, resource: "/notification/template", access: .app) { call in
            let name = request.pathParameters["name"] ?? ""
            let templates = self.templates
            guard let template = try await templates.template(appID: call.appID, name: name) else {
                throw EasemobError.notFound()
            }
            let data = try await templateData(call, template)
            guard try await templates.deleteTemplate(id: template.id) else { throw EasemobError.notFound() }
            try await store.forgetStamp(appID: call.appID, templateID: template.id)
            return call.success(data: data)
        }
    }
}
