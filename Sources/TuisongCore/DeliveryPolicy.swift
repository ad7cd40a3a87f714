import Foundation

/// Whether an IM account's app is on screen, as its devices last reported it.
public enum AppState: String, Sendable, Codable, Hashable {
    /// On screen: the IM connection delivers; no push.
    case foreground
    /// In the background or killed: offline push.
    case background
}

/// One device a message is about to reach, as the dispatcher hands it to a `DeliveryPolicy`.
public struct Recipient: Sendable, Hashable {
    public var deviceID: Int64?
    public var token: String
    public var environment: PushEnvironment
    /// The IM account (app-scoped user id) the device is bound to, if any.
    public var account: String?
    /// That account's row id, carried by the device (see `accountKey`).
    public var accountID: Int64?
    public var locale: String?
    /// The account's last reported app state; `nil` when it never reported one.
    public var appState: AppState?
    /// The credential selector the device registered with (a vendor's credential selector).
    public var credentialSelector: String?
    /// The device's push service: a policy may decide an Android device's content without
    /// what only iOS shows (each transport renders its service's message from the content).
    public var channel: PushChannel

    public init(
        deviceID: Int64?, token: String, environment: PushEnvironment, account: String? = nil,
        accountID: Int64? = nil, locale: String? = nil, appState: AppState? = nil, credentialSelector: String? = nil,
        channel: PushChannel
    ) {
        self.channel = channel
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.account = account
        self.accountID = accountID
        self.locale = locale
        self.appState = appState
        self.credentialSelector = credentialSelector
    }

    /// The bound account as `AccountStore.grantBadges` takes it; nil when unbound.
    public var accountKey: AccountKey? {
        guard let account, let accountID else { return nil }
        return AccountKey(id: accountID, name: account)
    }
}

/// What a policy decided for one recipient.
public enum DeliveryDecision: Sendable, Hashable {
    /// Send the message's own content.
    case send
    /// Send this content to this device (a per-receiver badge, alert or template). The device's
    /// transport renders it (and checks its service's size limit); the dispatcher keeps it with
    /// the delivery row when it has to retry, so a retry resends exactly what was decided.
    case sendContent(PushContent)
    /// Do not send; counted under `skipped` with this reason (`foreground`, `dnd`, `sender`, …).
    case skip(reason: String)
}

/// Decides, per receiver, whether and how a message is pushed (an IM
/// vendor's offline push rules). A provider hands one to the dispatcher through
/// `PushProvider.deliveryPolicy`; messages whose vendor has none take the one-payload path.
///
/// The dispatcher hands the policy each audience page (up to the page size, a thousand
/// recipients by default), the pages ready at the same time together through
/// `decide(pages:)`, whose default calls `decide` for each. Pages are read in audience order but several pages of one message
/// may be decided at the same time, so a decision must not depend on another page's having
/// been decided first: a badge counted once per message comes from `AccountStore.grantBadges`,
/// which is atomic per call. Answer with exactly one decision per recipient, in the same order.
/// Do batched work (one store round trip per page), never one per device. A thrown error is
/// retried by the dispatcher after a pause, with the same page; a page may also be decided
/// again after a crash.
public protocol DeliveryPolicy: Sendable {
    func decide(_ recipients: [Recipient], message: MessageRecord) async throws -> [DeliveryDecision]
    /// Pages of several messages (or of one) decided together, one result per page in order,
    /// each what `decide(_:message:)` would answer for it. The dispatcher hands over the pages
    /// that became ready while its last call was at work: under a chat load, many messages'
    /// one-recipient pages, for which a policy that reads or writes the store per page can do
    /// it once for all (`AccountStore.grantBadges(_:)`). A failed page fails alone; it is
    /// retried as `decide(_:message:)`'s errors are. The default decides each page with
    /// `decide(_:message:)`, side by side.
    func decide(pages: [PolicyPage]) async -> [Result<[DeliveryDecision], any Error>]
}

/// One audience page of one message, for `DeliveryPolicy.decide(pages:)`.
public struct PolicyPage: Sendable {
    public var recipients: [Recipient]
    public var message: MessageRecord

    public init(recipients: [Recipient], message: MessageRecord) {
        self.recipients = recipients
        self.message = message
    }
}

extension DeliveryPolicy {
    public func decide(pages: [PolicyPage]) async -> [Result<[DeliveryDecision], any Error>] {
        if pages.count == 1 {
            let page = pages[0]
            do {
                return [.success(try await decide(page.recipients, message: page.message))]
            } catch {
                return [.failure(error)]
            }
        }
        // A task per page, awaited in the pages' order. (A task group answering (index,
        // result) pairs trapped in release builds: an out-of-range index in the array's
        // subscript, under load, with Swift 6.3.1.)
        let tasks = pages.map { page in Task { try await decide(page.recipients, message: page.message) } }
        return await withTaskCancellationHandler {
            var results: [Result<[DeliveryDecision], any Error>] = []
            results.reserveCapacity(tasks.count)
            for task in tasks { results.append(await task.result) }
            return results
        } onCancel: {
            for task in tasks { task.cancel() }
        }
    }
}
