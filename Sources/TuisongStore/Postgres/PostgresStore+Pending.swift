// swift-format-ignore-file
import Foundation
import TuisongCore

// TRANSITIONAL, while the PostgreSQL store is being written in parallel: every requirement of
// `GatewayStore` not implemented yet, each failing `unavailable`. Whoever implements a group
// deletes its lines here (and only those). This file must be empty and gone before #21 closes.

private func pending(_ what: String = #function) -> StoreError {
    StoreError(.unavailable, "PostgreSQL store: \(what) is not implemented yet")
}

extension PostgresStore: GatewayStore {
    // MARK: group D — apps, devices, tags, settings, APNs and channel credentials, templates

    public func createApp(name: String, bundleID: String, apiKeyHash: String) async throws -> App { throw pending() }
    public func app(id: Int64) async throws -> App? { throw pending() }
    public func app(apiKeyHash: String) async throws -> App? { throw pending() }
    public func apps() async throws -> [App] { throw pending() }
    public func app(vendor: String, setting: String, value: String) async throws -> App? { throw pending() }
    public func updateApp(_ app: App) async throws { throw pending() }
    public func deleteApp(id: Int64) async throws -> Bool { throw pending() }

    public func registerDevice(appID: Int64, _ registration: DeviceRegistration) async throws -> (device: Device, created: Bool) { throw pending() }
    public func registerDevices(appID: Int64, _ registrations: [DeviceRegistration]) async throws -> Int { throw pending() }
    public func device(appID: Int64, token: DeviceToken) async throws -> Device? { throw pending() }
    public func device(id: Int64) async throws -> Device? { throw pending() }
    public func devices(appID: Int64, ids: [Int64]) async throws -> [Device] { throw pending() }
    public func deviceWithTags(appID: Int64, token: DeviceToken) async throws -> (device: Device, tags: [String])? { throw pending() }
    public func deleteDevice(appID: Int64, token: DeviceToken) async throws -> Bool { throw pending() }
    public func addTag(appID: Int64, token: DeviceToken, tag: TagName) async throws { throw pending() }
    public func removeTag(appID: Int64, token: DeviceToken, tag: TagName) async throws -> Bool { throw pending() }
    public func tags(appID: Int64, token: DeviceToken) async throws -> [String] { throw pending() }
    public func devices(appID: Int64, tag: TagName, cursor: String?, limit: Int) async throws -> Page<Device> { throw pending() }

    public func setting(_ key: String) async throws -> String? { throw pending() }
    public func setSetting(_ key: String, value: String) async throws { throw pending() }
    public func insertSettingIfAbsent(_ key: String, value: String) async throws -> Bool { throw pending() }

    public func addCredential(_ credential: NewCredential) async throws -> CredentialRecord { throw pending() }
    public func credentials(appID: Int64) async throws -> [CredentialRecord] { throw pending() }
    public func activeCredential(appID: Int64, environment: APNsEnvironment) async throws -> CredentialRecord? { throw pending() }
    public func credential(id: Int64) async throws -> CredentialRecord? { throw pending() }
    public func deleteCredential(id: Int64) async throws -> Bool { throw pending() }
    public func setCredentialStatus(id: Int64, status: String, reason: String?) async throws { throw pending() }

    public func addChannelCredential(_ credential: NewChannelCredential) async throws -> ChannelCredentialRecord { throw pending() }
    public func channelCredentials(appID: Int64) async throws -> [ChannelCredentialRecord] { throw pending() }
    public func activeChannelCredential(appID: Int64, channel: PushChannel, selector: String?) async throws -> ChannelCredentialRecord? { throw pending() }
    public func channelCredential(id: Int64) async throws -> ChannelCredentialRecord? { throw pending() }
    public func deleteChannelCredential(id: Int64) async throws -> Bool { throw pending() }
    public func setChannelCredentialStatus(id: Int64, status: String, reason: String?) async throws { throw pending() }

    public func templates(appID: Int64) async throws -> [PushTemplate] { throw pending() }
    public func template(id: Int64) async throws -> PushTemplate? { throw pending() }
    public func template(appID: Int64, name: String) async throws -> PushTemplate? { throw pending() }
    public func createTemplate(appID: Int64, name: String, titlePattern: String, bodyPattern: String) async throws -> PushTemplate { throw pending() }
    public func updateTemplate(_ template: PushTemplate) async throws { throw pending() }
    public func deleteTemplate(id: Int64) async throws -> Bool { throw pending() }

    // MARK: group A — accounts, badges, console queries, audience pages, delivery listings

    public func createAccount(appID: Int64, account: String) async throws -> Bool { throw pending() }
    public func existingAccounts(appID: Int64, among accounts: [String]) async throws -> Set<String> { throw pending() }
    public func deleteAccount(appID: Int64, account: String) async throws -> Bool { throw pending() }
    public func accounts(appID: Int64, cursor: String?, limit: Int) async throws -> Page<String> { throw pending() }
    public func bindDevice(appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?) async throws -> Device { throw pending() }
    public func unbindDevice(appID: Int64, token: DeviceToken) async throws -> Bool { throw pending() }
    public func devices(appID: Int64, account: String) async throws -> [Device] { throw pending() }
    public func setAppState(appID: Int64, account: String, _ state: AppState) async throws { throw pending() }
    public func appState(appID: Int64, account: String) async throws -> AppState? { throw pending() }
    public func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int] { throw pending() }
    public func grantBadges(appID: Int64, messageID: Int64, accounts: [AccountKey]) async throws -> [String: Int] { throw pending() }
    public func setBadge(appID: Int64, account: String, to value: Int) async throws { throw pending() }
    public func badge(appID: Int64, account: String) async throws -> Int { throw pending() }
    public func forgetFinishedBadgeGrants() async throws -> Int { throw pending() }

    public func searchDevices(appID: Int64, query: DeviceQuery, cursor: String?, limit: Int) async throws -> Page<Device> { throw pending() }
    public func deviceCount(appID: Int64) async throws -> Int { throw pending() }
    public func tagUsage(appID: Int64, limit: Int) async throws -> [TagUsage] { throw pending() }
    public func deliveries(deviceID: Int64, limit: Int) async throws -> [DeliveryRecord] { throw pending() }
    public func messageActivity(since: Date, scanLimit: Int) async throws -> [MessageActivity] { throw pending() }
    public func failureReasons(since: Date, scanLimit: Int) async throws -> [String: Int] { throw pending() }
    public func skipReasons(since: Date, scanLimit: Int) async throws -> [String: Int] { throw pending() }

    public func audiencePage(appID: Int64, audience: Audience, environment: APNsEnvironment?, after cursor: Int64, limit: Int, withRecipientDetails: Bool) async throws -> [AudienceEntry] { throw pending() }
    public func audienceCount(appID: Int64, audience: Audience, environment: APNsEnvironment?) async throws -> Int { throw pending() }
    public func deliveries(messageID: Int64, state: DeliveryState?, cursor: String?, limit: Int) async throws -> Page<DeliveryRecord> { throw pending() }
    public func releaseHeldDeliveries(appID: Int64, environment: APNsEnvironment, now: Date) async throws -> Int { throw pending() }
    public func releaseHeldDeliveries(appID: Int64, selector: String, now: Date) async throws -> Int { throw pending() }
    public func deliveryBacklog() async throws -> (retryQueued: Int, held: Int) { throw pending() }

    // MARK: group P — the database as plugins see it

    public var sharedDatabase: any SharedDatabase { PendingSharedDatabase() }

}

private struct PendingSharedDatabase: SharedDatabase {
    func write<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T { throw pending("SharedDatabase") }
    func read<T: Sendable>(_ body: @escaping @Sendable (any SQLExecutor) throws -> T) async throws -> T { throw pending("SharedDatabase") }
}
