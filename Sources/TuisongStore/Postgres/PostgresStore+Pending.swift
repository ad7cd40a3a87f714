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
