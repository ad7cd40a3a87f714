import Foundation
import TuisongCore

/// Seed 004 per receiver (`EasemobDecisions`): for each page of devices of an Easemob
/// message, one read of the receivers' profiles and settings (and the sender's nickname; one
/// read for all the pages decided together) and one of the template the message names. The badge is the receiver's offline count kept with
/// the message when it was sent, so every device of one receiver shows the same number and a
/// retry resends it.
struct EasemobDeliveryPolicy: DeliveryPolicy {
    let store: EasemobStore
    let templates: any TemplateStore
    let apps: any AppStore
    /// Where the app's settings are kept opened (`EasemobDirectory.opened`): its time zone
    /// without a read per message.
    let directory: EasemobDirectory
    let clock: any TuisongCore.Clock

    func decide(_ recipients: [Recipient], message record: MessageRecord) async throws -> [DeliveryDecision] {
        guard let message = EasemobMessage(context: record.vendorContext) else {
            // Not one of ours (it should not happen): the message's own payload.
            return recipients.map { _ in .send }
        }
        let timeZone = try await appTimeZone(appID: record.appID)
        let data = try await store.receiverData(
            appID: record.appID, usernames: Self.usernames(recipients), sender: message.from,
            conversation: message.conversation)
        return try await decide(recipients, record: record, message: message, data: data, timeZone: timeZone)
    }

    /// Several messages' pages: the receivers' profiles and settings read once per app for all
    /// of them (`EasemobStore.receiverData(appID:pages:)`; a chat load's lines each had a round
    /// trip of their own, issue #47); templates and push filters per page, as alone.
    func decide(pages: [PolicyPage]) async -> [Result<[DeliveryDecision], any Error>] {
        if pages.count == 1, let page = pages.first {
            return [await Self.result { try await decide(page.recipients, message: page.message) }]
        }
        var results = [Result<[DeliveryDecision], any Error>?](repeating: nil, count: pages.count)
        var byApp: [Int64: [(index: Int, message: EasemobMessage)]] = [:]
        for (index, page) in pages.enumerated() {
            guard let message = EasemobMessage(context: page.message.vendorContext) else {
                results[index] = .success(page.recipients.map { _ in .send })
                continue
            }
            byApp[page.message.appID, default: []].append((index, message))
        }
        for (appID, members) in byApp {
            do {
                let timeZone = try await appTimeZone(appID: appID)
                let data = try await store.receiverData(
                    appID: appID,
                    pages: members.map { member in
                        EasemobReceiverQuery(
                            usernames: Self.usernames(pages[member.index].recipients), sender: member.message.from,
                            conversation: member.message.conversation)
                    })
                for (member, data) in zip(members, data) {
                    let page = pages[member.index]
                    results[member.index] = await Self.result {
                        try await decide(
                            page.recipients, record: page.message, message: member.message, data: data,
                            timeZone: timeZone)
                    }
                }
            } catch {
                for member in members { results[member.index] = .failure(error) }
            }
        }
        return results.map { $0 ?? .failure(StoreError(.unavailable, "a page was not decided")) }
    }

    /// A page's decisions from what was read for it.
    private func decide(
        _ recipients: [Recipient], record: MessageRecord, message: EasemobMessage, data: EasemobReceiverData,
        timeZone: TimeZone
    ) async throws -> [DeliveryDecision] {
        var template: PushTemplate?
        if let wanted = message.template {
            template = try await templates.template(appID: record.appID, name: wanted.name)
        }
        // `em_push_filter` names devices by their Easemob device_id and notifier name: one read
        // for the page, only for a message that has one.
        var bindings: [[String: String]?]?
        if EasemobPushFilter(ext: message.ext) != nil {
            let columns = try await store.deviceColumns(
                appID: record.appID, deviceIDs: recipients.compactMap(\.deviceID))
            bindings = recipients.map { recipient in recipient.deviceID.flatMap { columns[$0] } }
        }
        return EasemobDecisions.decide(
            accounts: recipients.map(\.account), channels: recipients.map(\.channel), bindings: bindings,
            message: message,
            badges: EasemobDecisions.badges(record.vendorContext), data: data, template: template, now: clock.now,
            timeZone: timeZone)
    }

    private static func usernames(_ recipients: [Recipient]) -> [String] {
        Array(Set(recipients.compactMap(\.account)))
    }

    private static func result(
        _ body: () async throws -> [DeliveryDecision]
    ) async -> Result<[DeliveryDecision], any Error> {
        do { return .success(try await body()) } catch { return .failure(error) }
    }

    /// The app's do-not-disturb time zone (its Easemob `time_zone`, UTC+8 by default).
    func appTimeZone(appID: Int64) async throws -> TimeZone {
        // An app whose settings cannot be opened (no longer complete, or its secret not opening)
        // still has its zone read, as before the cache.
        if let opened = try? await directory.opened(appID: appID) { return opened.settings.timeZone }
        let text = try await apps.app(id: appID)?.vendorSettings[EasemobAppSettings.vendor]?["time_zone"]
        if let text, !text.isEmpty, let zone = EasemobAppSettings.parseTimeZone(text) { return zone }
        return TimeZone(secondsFromGMT: 8 * 3600)!
    }
}
