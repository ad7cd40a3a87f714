import Foundation
import Logging
import TuisongCore
import TuisongDelivery
import TuisongLookAlikes
import TuisongTransportKit

/// The console's credential operations on the running gateway: `CredentialService` checks and
/// seals uploads, the transport that reads them forgets what it cached, held deliveries are
/// released, and in local mode the bundled look-alike learns a new key (as Apple knows every key
/// of a team).
/// `GatewayRuntime.addCredential` goes through here too, so the steps exist once.
struct GatewayCredentialBackend: AdminCredentialBackend {
    let credentials: CredentialService
    let store: any ChannelCredentialStore & MessageStore
    let transports: GatewayTransports
    let engine: DeliveryEngine
    let localMock: LookAlikeServer?
    let channelCredentials: ChannelCredentialService
    let clock: any Clock
    let logger: Logger
    /// Where credential changes and wake-ups go to the other nodes; nil: this process only.
    var changes: (any StoreChangeFeed)? = nil
    /// How long "test connection" may take, DNS to the server's SETTINGS.
    var testTimeout: Duration = .seconds(15)
    /// The apps, for the topic of a `.p8` key's probe; nil: keys are not probed.
    var apps: AppCache? = nil
    /// The checks still running after their upload was answered.
    let pendingChecks = PendingCredentialChecks()

    /// Tells the other nodes; this node's caches were updated by the caller.
    private func publish(_ change: StoreChange) async {
        await changes?.publish(change)
    }

    /// Saves the upload first, then checks it (a `.p8` key's probe) and puts it to work: the
    /// answer waits for the check at most `checkBound` (nil: to its end), well inside the HTTP
    /// request's own timeout, else says `pending` while the check goes on and its result lands
    /// on the credential. A repeat of an upload already saved answers that credential.
    func save(_ upload: AdminCredentialUpload, checkBound: Duration?) async throws -> AdminCredentialAdded {
        let saved: (record: CredentialRecord, added: Bool)
        do {
            saved = try await credentials.addOnce(
                try Self.credentialUpload(upload), appID: upload.appID, environment: upload.environment,
                selector: upload.selector)
        } catch let error as CredentialError {
            throw Self.rejection(error)
        }
        let key = PendingCredentialChecks.Key.uploaded(saved.record.id)
        guard saved.added else {
            return AdminCredentialAdded(
                record: saved.record, check: pendingChecks.contains(key) ? .pending : .repeated(saved.record),
                existing: true)
        }
        let record = saved.record
        let checked = await pendingChecks.run(key, within: checkBound, on: clock) {
            await putToWork(record)
        }
        let current = checked?.record ?? record
        return AdminCredentialAdded(record: current, check: checked?.check ?? .pending, existing: false)
    }

    /// A refused upload as the admin API answers it: its code, message, field and Chinese text.
    private static func rejection(_ error: CredentialError) -> AdminCredentialRejection {
        AdminCredentialRejection(
            code: error.code.rawValue, message: error.message, field: error.field ?? field(error.code),
            text: error.text)
    }

    /// Validates, seals and stores the credential, then puts it to work: its transport forgets its
    /// cache, held deliveries are released, and in local mode the look-alike learns a new key.
    /// Waits for its check. `environment` nil: both, where the credential can serve both.
    func add(
        _ upload: CredentialUpload, appID: Int64, environment: PushEnvironment?, selector: String? = nil
    ) async throws -> CredentialRecord {
        let saved = try await credentials.addOnce(upload, appID: appID, environment: environment, selector: selector)
        guard saved.added else { return saved.record }
        return await putToWork(saved.record).record
    }

    /// A credential just saved: the local look-alike learns a key, a `.p8` key is probed, its
    /// transport and the other nodes look credentials up again, and, unless the service refused
    /// it, what was held for want of it is released in every environment it serves.
    private func putToWork(_ saved: CredentialRecord) async -> (record: CredentialRecord, check: ChannelCredentialCheck)
    {
        var record = saved
        transports.uploaded?.trustLocally(record)
        // A token key is asked about once (a made-up push): the service refusing its provider
        // token (wrong key id or team id) marks it failing at once rather than at the first push.
        let check: ChannelCredentialCheck
        switch await probe(record) {
        case .refused(let reason):
            check = .refused(reason)
            do {
                try await store.setCredentialStatus(id: record.id, status: "failing", reason: reason)
            } catch {
                logger.error(
                    "could not mark a refused key failing",
                    metadata: ["credential": "\(record.id)", "error": "\(error)"])
            }
            record.status = "failing"
            record.statusReason = reason
            logger.warning(
                "the service refused the provider token of a key just added",
                metadata: [
                    "credential": "\(record.id)", "app": "\(record.appID)", "channel": "\(record.channel)",
                    "reason": "\(reason)",
                ])
        case .accepted: check = .accepted
        case .unavailable(let reason): check = .unavailable(reason)
        case nil:
            check =
                record.kind == .p8
                ? .notChecked("no app to probe the key with") : .notChecked(Self.certificateNotChecked)
        }
        await transports.uploadedCredentialsChanged(appID: record.appID)
        await publish(.credentials(appID: record.appID))
        guard !record.isFailing else { return (record, check) }
        await releaseHeldForNewCredential(
            id: record.id, appID: record.appID, routes: record.environments.map { .environment($0) },
            selector: record.selector)
        return (record, check)
    }

    static let certificateNotChecked = "a certificate is checked in the TLS handshake of the first push"

    /// A `.p8` key's provider token, asked about with one push to a made-up device token.
    private func probe(_ record: CredentialRecord) async -> CredentialProbe? {
        guard record.kind == .p8, let hooks = transports.uploaded, let topic = await topic(of: record),
            let result = try? await hooks.probe(record, topic, testTimeout)
        else { return nil }
        logger.info(
            "console: probed a token key", metadata: ["credential": "\(record.id)", "result": "\(result)"])
        return result
    }

    /// The topic a probe of the credential's app pushes to (its bundle id); nil: no probe.
    private func topic(of record: CredentialRecord) async -> String? {
        guard let apps, let app = try? await apps.app(id: record.appID) else { return nil }
        return app.bundleID
    }

    /// Deletes the credential; what was held for it (refused, or one route's only credential)
    /// is released, to go out with the credential that serves now or be held for want of one.
    func remove(_ credential: CredentialRecord) async throws -> Bool {
        let removed = try await store.deleteCredential(id: credential.id)
        await transports.uploadedCredentialsChanged(appID: credential.appID)
        await publish(.credentials(appID: credential.appID))
        guard removed else { return false }
        try await releaseHeld(
            appID: credential.appID, routes: credential.environments.map { .environment($0) },
            selector: credential.selector)
        return true
    }

    /// Releases what was held on `routes`, and on `selector` (devices held for want of a
    /// selector may be of another environment), and sends it now: a credential was added or
    /// deleted, so the one that serves now sends it or holds it again.
    private func releaseHeld(appID: Int64, routes: [CredentialRoute], selector: String?) async throws {
        await wake(
            try await store.releaseHeldDeliveries(appID: appID, routes: routes, selector: selector, now: clock.now))
    }

    /// `releaseHeld` for a credential just added, whose answer must not fail for it: held
    /// deliveries also go out when the retry worker finds the credential.
    private func releaseHeldForNewCredential(id: Int64, appID: Int64, routes: [CredentialRoute], selector: String?)
        async
    {
        do {
            try await releaseHeld(appID: appID, routes: routes, selector: selector)
        } catch {
            logger.error(
                "could not release deliveries held for a credential just added",
                metadata: ["credential": "\(id)", "error": "\(error)"])
        }
    }

    /// Sends what was released now, here and on the other nodes.
    private func wake(_ released: Int) async {
        guard released > 0 else { return }
        engine.wake()
        await publish(.wake)
    }

    func addChannel(_ upload: ChannelCredentialUpload, appID: Int64, selector: String?) async throws
        -> (record: ChannelCredentialRecord, check: ChannelCredentialCheck)
    {
        let added = try await saveChannel(upload, appID: appID, selector: selector, checkBound: nil)
        return (added.record, added.check)
    }

    /// Saves the upload first, then signs in with it once (where the service has a sign-in)
    /// and puts it to work; the answer waits for the sign-in at most `checkBound` (nil: to its
    /// end), else says `pending` while it goes on. A repeat of an upload already saved answers
    /// that credential.
    func saveChannel(_ upload: ChannelCredentialUpload, appID: Int64, selector: String?, checkBound: Duration?)
        async throws -> AdminChannelCredentialAdded
    {
        let saved: (record: ChannelCredentialRecord, added: Bool)
        do {
            saved = try await channelCredentials.addOnce(upload, appID: appID, selector: selector)
        } catch let error as CredentialError {
            throw Self.rejection(error)
        }
        let key = PendingCredentialChecks.Key.channel(saved.record.id)
        guard saved.added else {
            return AdminChannelCredentialAdded(
                record: saved.record, check: pendingChecks.contains(key) ? .pending : .repeated(saved.record),
                existing: true)
        }
        let record = saved.record
        let checked = await pendingChecks.run(key, within: checkBound, on: clock) {
            await putToWork(record)
        }
        return AdminChannelCredentialAdded(
            record: checked?.record ?? record, check: checked?.check ?? .pending, existing: false)
    }

    /// A channel credential just saved: local mode's look-alike learns it, the service is asked
    /// once, and unless it refused, what was held for want of it is released.
    private func putToWork(_ saved: ChannelCredentialRecord) async -> (
        record: ChannelCredentialRecord, check: ChannelCredentialCheck
    ) {
        var record = saved
        let appID = record.appID
        if let localMock { LocalLookAlikes.trust(record, secrets: channelCredentials, on: localMock, logger: logger) }
        // One sign-in with the service: a refused credential is kept, marked failing with the
        // service's reason, and its held deliveries stay held. Local mode's look-alike was just
        // taught the credential: a sign-in there would prove nothing, so none is claimed.
        let check = localMock == nil ? await check(record) : .localMode
        if case .refused(let reason) = check {
            do {
                try await channelCredentials.store.setChannelCredentialStatus(
                    id: record.id, status: "failing", reason: reason)
            } catch {
                logger.error(
                    "could not mark a refused credential failing",
                    metadata: ["credential": "\(record.id)", "error": "\(error)"])
            }
            record.status = "failing"
            record.statusReason = reason
            logger.warning(
                "the service refused a channel credential just added",
                metadata: [
                    "credential": "\(record.id)", "channel": "\(record.channel.rawValue)", "app": "\(appID)",
                    "reason": "\(reason)",
                ])
        }
        transports.credentialsChanged(appID: appID)
        await publish(.channelCredentials(appID: appID))
        if check.isRefused { return (record, check) }
        // The service's deliveries held for want of a credential, or for a refused one.
        await releaseHeldForNewCredential(
            id: record.id, appID: appID, routes: [.channel(record.channel)], selector: record.selector)
        return (record, check)
    }

    /// Signs in once with the stored credential (its secret opened again, as a send would).
    private func check(_ record: ChannelCredentialRecord) async -> ChannelCredentialCheck {
        let secret: [UInt8]
        do {
            secret = try channelCredentials.secret(of: record)
        } catch {
            return .refused(SendReason.credentialUnusable.description)
        }
        return await transports.check(
            ChannelCredential(
                id: record.id, channel: record.channel, vendorAppID: record.vendorAppID, clientID: record.clientID,
                secret: secret, options: record.options))
    }

    func quotaExhausted(_ credential: ChannelCredentialRecord) -> Date? {
        transports.quotaExhausted(credential)
    }

    /// Deletes the credential; what was held for it is released, as `remove` does.
    func removeChannel(_ credential: ChannelCredentialRecord) async throws -> Bool {
        let removed = try await channelCredentials.store.deleteChannelCredential(id: credential.id)
        transports.credentialsChanged(appID: credential.appID)
        await publish(.channelCredentials(appID: credential.appID))
        guard removed else { return false }
        try await releaseHeld(
            appID: credential.appID, routes: [.channel(credential.channel)], selector: credential.selector)
        return true
    }

    func testConnection(_ credential: CredentialRecord) async -> (ok: Bool, detail: String, endpoint: String) {
        guard let hooks = transports.uploaded else {
            return (false, "no transport of this gateway takes uploaded credentials", "")
        }
        // A token key's test asks the service with a push (a made-up device token) and keeps the
        // credential's status to what it said.
        let topic = credential.kind == .p8 ? await topic(of: credential) : nil
        let result = await hooks.testConnection(credential, topic, testTimeout)
        if let reason = result.refusal, !credential.isFailing || credential.statusReason != reason {
            try? await store.setCredentialStatus(id: credential.id, status: "failing", reason: reason)
            await transports.uploadedCredentialsChanged(appID: credential.appID)
            await publish(.credentials(appID: credential.appID))
        }
        logger.info(
            "console: tested a credential",
            metadata: [
                "credential": "\(credential.id)", "endpoint": "\(result.endpoint)",
                "result": "\(result.ok ? "ok" : "failed")",
            ])
        return (result.ok, result.detail, result.endpoint)
    }

    /// The service's upload from the console's, made as its declared form makes one
    /// (`UploadedCredentialForm.upload`: the fields by their declared names); a text kind (all
    /// but `.p12`) must be UTF-8.
    static func credentialUpload(_ upload: AdminCredentialUpload) throws -> CredentialUpload {
        if upload.kind != .p12, String(validating: upload.file, as: UTF8.self) == nil {
            throw CredentialError(
                .wrongKind,
                upload.kind == .p8
                    ? "a .p8 key is PEM text; this file is binary (a .p12 certificate?)"
                    : "a PEM file is text; this file is binary (a .p12 certificate?)")
        }
        return UploadedCredentialForm.upload(kind: upload.kind, file: upload.file, values: upload.values)
    }

    /// The form field a refusal that names none is about (an uploaded file's check names its
    /// own: `password`, `key_id`).
    static func field(_ code: CredentialError.Code) -> String {
        switch code {
        case .invalidSelector: "selector"
        case .invalidVendorAppID: "vendor_app_id"
        case .invalidClientID: "client_id"
        case .invalidClientSecret: "client_secret"
        case .invalidBadgeClass: "badge_class"
        default: "file"
        }
    }
}
