import Foundation
import TuisongCore

/// Seed 004 per receiver (`EasemobDecisions`): for each page of devices of an Easemob
/// message, one read of the receivers' profiles and settings (and the sender's nickname) and
/// one of the template the message names. The badge is the receiver's offline count kept with
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
        let usernames = Array(Set(recipients.compactMap(\.account)))
        let data = try await store.receiverData(
            appID: record.appID, usernames: usernames, sender: message.from, conversation: message.conversation)
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
