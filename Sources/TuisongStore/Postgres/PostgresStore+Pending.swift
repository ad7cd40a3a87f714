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




    // MARK: group P — the database as plugins see it


    // MARK: group Q — messages and the work queue

    public func createMessage(_ job: PushJob, payload: [UInt8], state: MessageState) async throws -> MessageRecord { throw pending() }
    public func message(id: Int64) async throws -> MessageRecord? { throw pending() }
    public func messageProgress(id: Int64) async throws -> MessageProgressSnapshot? { throw pending() }
    public func channelCounts(messageID: Int64) async throws -> [PushChannel: DeliveryCounts] { throw pending() }
    public func message(appID: Int64, vendorMessageID: String) async throws -> MessageRecord? { throw pending() }
    public func messages(appID: Int64?, limit: Int) async throws -> [MessageRecord] { throw pending() }
    public func dispatchableMessageIDs(now: Date) async throws -> [Int64] { throw pending() }
    public func startMessage(id: Int64, total: Int?, at: Date) async throws -> Bool { throw pending() }
    public func setExpectedTotal(id: Int64, total: Int) async throws { throw pending() }
    public func setMessageState(id: Int64, _ state: MessageState, at: Date) async throws { throw pending() }
    public func cancelScheduledMessage(id: Int64, at: Date) async throws -> Bool { throw pending() }
    public func recordProgress(_ progress: MessageProgress, at: Date) async throws { throw pending() }
    public func claimDueDeliveries(now: Date, limit: Int) async throws -> [DeliveryRecord] { throw pending() }
    public func requeueInterruptedDeliveries() async throws -> Int { throw pending() }
    public func applyDeliveryUpdates(_ updates: [DeliveryUpdate], at: Date) async throws { throw pending() }
    public func claimWork(now: Date, limit: Int, running: Set<MessageSliceKey>) async throws -> [WorkClaim] { throw pending() }
    public func renewLeases(_ slices: [MessageSliceKey: Int64], now: Date) async throws -> (held: Set<MessageSliceKey>, until: Date?) { throw pending() }
    public func releaseSlice(_ key: MessageSliceKey, fence: Int64) async throws { throw pending() }
    public func liveNodeCount() async throws -> Int { throw pending() }
}
