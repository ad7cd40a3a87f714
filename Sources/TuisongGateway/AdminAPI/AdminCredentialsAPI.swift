import Foundation
import TuisongCore
import TuisongHTTP
import TuisongTransportKit

/// A credential file as the console uploads it, decoded but not yet checked.
struct AdminCredentialUpload: Sendable {
    var appID: Int64
    var kind: CredentialKind
    /// nil: both, where the credential can serve both (a `.p8` key, a universal certificate;
    /// a certificate for one environment serves the one it names).
    var environment: PushEnvironment?
    /// The file's bytes: a `.p8` PEM, a `.p12` bundle, or PEM certificate + key. Secret.
    var file: [UInt8]
    /// The declared form's fields given with the file, by their names
    /// (`UploadedCredentialForm.needs` and `optional` of its kind): ids, a password (secret).
    var values: [String: String] = [:]
    /// The vendor selector (a vendor's credential selector); nil = the default credential.
    var selector: String?
}

/// Why an uploaded credential was refused, in the credential service's words:
/// `wrong_password`, `corrupt_file`, `expired`, `key_mismatch`, `wrong_kind`, ….
struct AdminCredentialRejection: Error, Sendable {
    var code: String
    var message: String
    var field: String?
    /// The message in both languages, when the transport gave the Chinese.
    var text: LocalizedText?
}

/// An upload as saved: the credential (the one saved before, for a repeat), what its check
/// found so far (`pending` while it runs on), and whether it was there already.
struct AdminCredentialAdded: Sendable {
    var record: CredentialRecord
    var check: ChannelCredentialCheck
    var existing: Bool
}

struct AdminChannelCredentialAdded: Sendable {
    var record: ChannelCredentialRecord
    var check: ChannelCredentialCheck
    var existing: Bool
}

/// What the console needs from the credential service: save an upload (sealing its secret)
/// and check it, remove a credential (closing what uses it), and try one against its service.
protocol AdminCredentialBackend: Sendable {
    /// Parses and saves the upload, then checks it (a `.p8` key's probe), waiting at most
    /// `checkBound` for the check; throws `AdminCredentialRejection` for a file that cannot be
    /// used. A repeat of an upload already saved answers that credential, `existing`.
    func save(_ upload: AdminCredentialUpload, checkBound: Duration?) async throws -> AdminCredentialAdded
    func remove(_ credential: CredentialRecord) async throws -> Bool
    /// Opens TLS + HTTP/2 to the service's URL of the credential's environment with it.
    func testConnection(_ credential: CredentialRecord) async -> (ok: Bool, detail: String, endpoint: String)
    /// Checks and saves an Android credential (sealing its secret), then signs in with it once
    /// where the service has a sign-in, waiting at most `checkBound`: a refused one is kept,
    /// marked failing with the service's reason. Throws `AdminCredentialRejection` for one that
    /// cannot be used at all. A repeat answers the credential saved before, `existing`.
    func saveChannel(_ upload: ChannelCredentialUpload, appID: Int64, selector: String?, checkBound: Duration?)
        async throws -> AdminChannelCredentialAdded
    func removeChannel(_ credential: ChannelCredentialRecord) async throws -> Bool
    /// Until when the credential's daily quota is used up (a service with one,
    /// `TransportInstance.quotaExhausted`); nil when it is not.
    func quotaExhausted(_ credential: ChannelCredentialRecord) -> Date?
    /// The checks still running after their upload was answered.
    var pendingChecks: PendingCredentialChecks { get }
}

/// The uploaded file credentials of an app (`TransportRegistry.uploadedFilesChannel`'s): list
/// with expiry warnings, upload, delete, test connection.
struct AdminCredentialsAPI: Sendable {
    let api: AdminAPI
    let backend: any AdminCredentialBackend

    var store: any AdminStore { api.store }
    /// Credential files are a few KiB; 64 KiB is generous and keeps parsers on small input.
    static let maxFileBytes = 64 << 10

    func register(on router: Router) {
        let apps = AdminAppsAPI(api: api)
        api.add(.GET, "/apps/{app}/credentials", on: router) { request in
            let app = try await apps.app(request)
            let now = api.clock.now
            let records = try await store.credentials(appID: app.id)
            let active = AdminCredentialView.activeIDs(records)
            return .json(object: [
                "credentials": records.map { record in
                    var object = AdminCredentialView.object(record, now: now)
                    // Whether pushes go through it: one replaced by a working one does not.
                    object["active"] = active.contains(record.id)
                    object["check_pending"] = backend.pendingChecks.contains(.uploaded(record.id))
                    return object
                }
            ])
        }
        api.add(.POST, "/apps/{app}/credentials", bodyLimit: 256 << 10, on: router) { request in
            let app = try await apps.app(request)
            let form = api.config.transports.registry.uploadedFiles?.uploadedCredentialForm
            let upload = try Self.upload(appID: app.id, AdminBody(request), form: form)
            let added: AdminCredentialAdded
            do {
                added = try await backend.save(upload, checkBound: api.credentialCheckBound)
            } catch let rejection as AdminCredentialRejection {
                throw AdminError(
                    422, rejection.code, rejection.message, field: rejection.field ?? "file", text: rejection.text)
            }
            let record = added.record
            api.logger.info(
                added.existing
                    ? "console: a credential uploaded again is the one saved before" : "console: added a credential",
                metadata: [
                    "credential": "\(record.id)", "kind": "\(record.kind.rawValue)",
                    "environment": "\(record.environmentName)", "app": "\(app.id)",
                    "check": "\(added.check.object["result"] ?? "")",
                ]
            )
            var object = AdminCredentialView.object(record, now: api.clock.now)
            object["check"] = added.check.object
            object["check_pending"] = added.check == .pending
            object["existing"] = added.existing
            // Saved (201) whatever the check found; a repeat answers the one saved before (200).
            return .json(object: object, status: added.existing ? 200 : 201)
        }
        api.add(.DELETE, "/apps/{app}/credentials/{credential}", on: router) { request in
            let credential = try await credential(request)
            guard try await backend.remove(credential) else { throw AdminError.notFound("credential") }
            api.logger.info(
                "console: deleted a credential",
                metadata: ["credential": "\(credential.id)", "app": "\(credential.appID)"])
            return .empty()
        }
        api.add(.POST, "/apps/{app}/credentials/{credential}/test", on: router) { request in
            let credential = try await credential(request)
            let result = await backend.testConnection(credential)
            return .json(object: ["ok": result.ok, "detail": result.detail, "endpoint": result.endpoint])
        }
        registerChannels(on: router, apps: apps)
    }

    /// The credentials of the transports with a declared form (`CredentialForm`): one JSON key
    /// per field, a file in base64.
    func registerChannels(on router: Router, apps: AdminAppsAPI) {
        api.add(.GET, "/apps/{app}/channel-credentials", on: router) { request in
            let app = try await apps.app(request)
            let records = try await store.formCredentials(appID: app.id)
            return .json(object: [
                "credentials": zip(records, ChannelCredentialView.objects(records)).map { record, listed in
                    var object = listed
                    object["check_pending"] = backend.pendingChecks.contains(.channel(record.id))
                    object["quota_exhausted_until"] =
                        backend.quotaExhausted(record).map { ISO8601.string($0) as Any } ?? NSNull()
                    return object
                }
            ])
        }
        api.add(.POST, "/apps/{app}/channel-credentials", bodyLimit: 256 << 10, on: router) { request in
            let app = try await apps.app(request)
            let body = try AdminBody(request)
            let (upload, selector) = try Self.channelUpload(body, registry: api.config.transports.registry)
            let added: AdminChannelCredentialAdded
            do {
                added = try await backend.saveChannel(
                    upload, appID: app.id, selector: selector, checkBound: api.credentialCheckBound)
            } catch let rejection as AdminCredentialRejection {
                throw AdminError(
                    422, rejection.code, rejection.message, field: rejection.field ?? "file", text: rejection.text)
            }
            let record = added.record
            api.logger.info(
                "console: added a channel credential",
                metadata: [
                    "credential": "\(record.id)", "channel": "\(record.channel.rawValue)", "app": "\(app.id)",
                    "check": "\(added.check.object["result"] ?? "")",
                ])
            var object = ChannelCredentialView.object(record)
            object["check"] = added.check.object
            object["check_pending"] = added.check == .pending
            object["existing"] = added.existing
            // Whether it took over its channel and selector: one the service refused does not
            // replace one that works; the one that stays in use is named.
            let route = try await store.formCredentials(appID: app.id).filter {
                $0.channel == record.channel && $0.selector == record.selector
            }
            let serving = ChannelCredentialView.activeIDs(route).first
            object["active"] = serving == record.id
            object["active_credential_id"] = serving.map { $0 as Any } ?? NSNull()
            // Saved (201) whatever the check found; a repeat answers the one saved before (200).
            return .json(object: object, status: added.existing ? 200 : 201)
        }
        api.add(.DELETE, "/apps/{app}/channel-credentials/{credential}", on: router) { request in
            let appID = try request.adminID("app", "app")
            let id = try request.adminID("credential", "credential")
            guard let credential = try await store.channelCredential(id: id), credential.appID == appID,
                credential.environment == nil,
                try await backend.removeChannel(credential)
            else { throw AdminError.notFound("credential") }
            api.logger.info(
                "console: deleted a channel credential",
                metadata: ["credential": "\(credential.id)", "app": "\(credential.appID)"])
            return .empty()
        }
    }

    /// The body of `POST …/channel-credentials`: `channel`, one key per field of its declared
    /// form (a file's bytes in base64), and an optional `selector`.
    static func channelUpload(_ body: AdminBody, registry: TransportRegistry) throws -> (
        ChannelCredentialUpload, String?
    ) {
        guard let name = try body.string("channel"), let channel = registry.channel(named: name),
            let form = registry.declaration(of: channel)?.credentialForm
        else {
            throw AdminError.invalid("channel", "\"channel\" must be \(registry.formChannelList)")
        }
        let selector = try Self.selector(body)
        var input = CredentialFormInput()
        for field in form.fields {
            switch field.kind {
            case .file:
                guard let encoded = try body.string(field.name, maxLength: maxFileBytes * 2), !encoded.isEmpty else {
                    if field.required {
                        throw AdminError.invalid(field.name, "choose \(field.help)")
                    }
                    continue
                }
                guard let data = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters), !data.isEmpty,
                    data.count <= maxFileBytes
                else {
                    throw AdminError.invalid(
                        field.name, "\"\(field.name)\" must be the file's bytes in base64, at most 64 KiB")
                }
                input.files[field.name] = Array(data)
            case .text, .secret:
                let value = try body.string(field.name, maxLength: 1024)
                let trimmed = value?.trimmingCharacters(in: .whitespaces) ?? ""
                if field.required, trimmed.isEmpty {
                    throw AdminError.invalid(field.name, "the \(field.label.en.lowercased()) is required")
                }
                if let value { input.values[field.name] = field.kind == .secret ? value : trimmed }
            }
        }
        return (.form(channel: channel, input), selector)
    }

    private func credential(_ request: Request) async throws -> CredentialRecord {
        let appID = try request.adminID("app", "app")
        let id = try request.adminID("credential", "credential")
        guard let credential = try await store.credential(id: id), credential.appID == appID else {
            throw AdminError.notFound("credential")
        }
        return credential
    }

    /// The upload in `body`, read as `form` (the uploaded-files transport's declared form) asks:
    /// a file of one of its kinds, and the fields that kind needs (each checked by its rule) or
    /// may be given with. nil `form`: this gateway takes no uploaded files.
    static func upload(appID: Int64, _ body: AdminBody, form: UploadedCredentialForm?) throws -> AdminCredentialUpload {
        guard let form else {
            throw AdminError(404, "not_found", "this gateway has no transport whose credentials are uploaded files")
        }
        let kinds = form.files.map(\.name)
        guard let kindName = try body.string("kind"), kinds.contains(kindName),
            let kind = CredentialKind(rawValue: kindName)
        else {
            let named = kinds.dropLast().joined(separator: ", ") + (kinds.count > 1 ? " or " : "") + (kinds.last ?? "")
            throw AdminError.invalid("kind", "\"kind\" must be \(named)")
        }
        // `both` (or none): a `.p8` key serves sandbox and production; a certificate serves
        // both when it is universal, else the environment it names.
        let environmentName = try body.string("environment") ?? "both"
        let environment: PushEnvironment?
        if environmentName == "both" || environmentName.isEmpty {
            environment = nil
        } else if let named = PushEnvironment(rawValue: environmentName) {
            environment = named
        } else {
            throw AdminError.invalid("environment", "\"environment\" must be both, sandbox or production")
        }
        guard let encoded = try body.string("file", maxLength: maxFileBytes * 2), !encoded.isEmpty else {
            throw AdminError.invalid("file", "choose a file to upload")
        }
        guard let data = Data(base64Encoded: encoded, options: .ignoreUnknownCharacters), !data.isEmpty else {
            throw AdminError.invalid("file", "\"file\" must be the file's bytes in base64")
        }
        guard data.count <= maxFileBytes else {
            throw AdminError.invalid(
                "file", "the file is larger than \(maxFileBytes / 1024) KiB; that is not a credential")
        }
        var upload = AdminCredentialUpload(appID: appID, kind: kind, environment: environment, file: Array(data))
        upload.selector = try Self.selector(body)
        let fields = Dictionary(form.fields.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        // What the kind needs: present and kept to the field's rule (an id trimmed of the spaces
        // a copy from a web page brings). Any other field of the form is not this kind's.
        for name in form.needs[kindName] ?? [] {
            guard let field = fields[name] else { continue }
            let value = (try body.string(name, maxLength: 1024) ?? "").trimmingCharacters(in: .whitespaces)
            guard !value.isEmpty else { throw AdminError.invalid(name, "the \(field.label.en) is required") }
            if let problem = field.rule.problem(value) {
                throw AdminError.invalid(name, "the \(field.label.en) \(problem)")
            }
            upload.values[name] = value
        }
        // What it may be given with, as given (a password is kept exactly); empty is none.
        for name in form.optional[kindName] ?? [] {
            if let value = try body.string(name, maxLength: 1024), !value.isEmpty { upload.values[name] = value }
        }
        return upload
    }

    /// The body's `selector`: text, or a whole number for a Tencent busiId, checked by
    /// `CredentialSelector`; a boolean, an object, an array or a fraction is refused
    /// (`400 invalid_selector`), never taken as "no selector".
    static func selector(_ body: AdminBody) throws -> String? {
        let raw: String?
        switch body.object["selector"] {
        case nil, is NSNull: raw = nil
        case let text as String: raw = text
        case let number as Int where number >= 0: raw = String(number)
        default:
            throw AdminError(
                400, CredentialError.Code.invalidSelector.rawValue,
                "\"selector\" must be a string (a busiId may be a whole number)", field: "selector")
        }
        do {
            return try CredentialSelector.validated(raw)
        } catch {
            throw AdminError(400, error.code.rawValue, error.message, field: "selector")
        }
    }
}

extension AdminAPI {
    /// How long an upload's answer waits for the credential's check: a third of the request
    /// timeout, at most 10 s, so the answer always says what happened (saved; the check passed,
    /// failed or is still running) instead of the request timing out after the save.
    var credentialCheckBound: Duration {
        .milliseconds(min(10_000, config.listen.requestTimeoutSeconds * 1000 / 3))
    }
}
