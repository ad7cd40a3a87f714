import Foundation

/// A stored message with its live-or-persisted progress.
public struct MessageRecord: Sendable, Hashable {
    public var id: Int64
    public var appID: Int64
    public var vendor: String
    public var vendorMessageID: String?
    public var audience: Audience
    /// What the message says (`messages.content`); a policy may decide other content per
    /// recipient (`DeliveryRecord.content`).
    public var content: PushContent
    public var options: PushOptions
    public var state: MessageState
    public var sendAt: Date?
    public var labels: [String: String]
    public var createdAt: Date
    public var startedAt: Date?
    public var completedAt: Date?
    /// Audience entries expected (known once dispatch starts; final at completion).
    public var total: Int?
    /// Audience position (device id, or token index + 1) up to which every entry has a
    /// persisted outcome. Dispatch resumes after it following a restart.
    public var cursor: Int64
    /// Persisted counts: entries ≤ cursor plus retry rows. `sending` is always 0 here; the
    /// dispatcher overlays what is in flight.
    public var counts: DeliveryCounts
    public var failures: [String: Int]
    /// Persisted skip counts by reason (a policy's `foreground`, `dnd`…, `DeviceInvalidated`).
    public var skips: [String: Int]
    /// The vendor's own description of the message (see `PushJob.vendorContext`).
    public var vendorContext: JSONValue?

    public init(
        id: Int64, appID: Int64, vendor: String, vendorMessageID: String?, audience: Audience,
        content: PushContent, options: PushOptions, state: MessageState,
        sendAt: Date?, labels: [String: String], createdAt: Date, startedAt: Date?,
        completedAt: Date?, total: Int?, cursor: Int64, counts: DeliveryCounts, failures: [String: Int],
        skips: [String: Int] = [:], vendorContext: JSONValue? = nil
    ) {
        self.id = id
        self.appID = appID
        self.vendor = vendor
        self.vendorMessageID = vendorMessageID
        self.audience = audience
        self.content = content
        self.options = options
        self.state = state
        self.sendAt = sendAt
        self.labels = labels
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.total = total
        self.cursor = cursor
        self.counts = counts
        self.failures = failures
        self.skips = skips
        self.vendorContext = vendorContext
    }
}

extension MessageRecord {
    /// The record of a message just inserted, as it was committed: built from what was written
    /// rather than read back, which would cost the accepting request a second round trip and
    /// could already show the dispatcher's claim (`sending`) instead of what was accepted.
    public static func created(
        id: Int64, job: PushJob, state: MessageState, createdAt: Date
    ) -> MessageRecord {
        MessageRecord(
            id: id, appID: job.appID, vendor: job.vendor, vendorMessageID: job.vendorMessageID,
            audience: job.audience, content: job.content, options: job.options,
            // Stored in milliseconds: the record says what a later read will say.
            state: state, sendAt: job.sendAt.map { SQLTime.date(SQLTime.milliseconds($0)) }, labels: job.labels,
            createdAt: createdAt, startedAt: nil,
            completedAt: nil, total: nil, cursor: 0, counts: DeliveryCounts(), failures: [:], skips: [:],
            vendorContext: job.vendorContext)
    }
}

/// One audience entry handed to the dispatcher.
public struct AudienceEntry: Sendable, Hashable {
    /// Keyset position: the device id for device audiences, token index + 1 for tokens.
    public var position: Int64
    public var deviceID: Int64?
    public var token: String
    /// The device's environment (for a token no device registered: the push's, or production).
    public var environment: PushEnvironment
    /// The device's last registration, to settle the 410 race.
    public var registeredAt: Date?
    /// Why this entry is skipped without sending (unknown device, invalidated token, …).
    public var skipReason: String?
    /// The credential selector the device registered with; picks the app's credential.
    public var credentialSelector: String?
    /// The device's push service; for an entry that names no registered device,
    /// `ChannelCatalog.unregisteredChannel` (the channel bare tokens are taken for).
    public var channel: PushChannel
    /// The bound IM account, its last reported app state and the device's locale: filled for
    /// `accounts`/`allAccounts` audiences and whenever the page is read `withRecipientDetails`.
    /// One reference, so entries of the one-payload path stay small to copy.
    public var details: RecipientDetails?

    public var account: String? { details?.account }
    public var accountID: Int64? { details?.accountID }
    public var appState: AppState? { details?.appState }
    public var locale: String? { details?.locale }

    public init(
        position: Int64, deviceID: Int64?, token: String, environment: PushEnvironment,
        registeredAt: Date? = nil, skipReason: String? = nil, credentialSelector: String? = nil, channel: PushChannel,
        account: String? = nil, accountID: Int64? = nil, appState: AppState? = nil, locale: String? = nil
    ) {
        self.position = position
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.registeredAt = registeredAt
        self.skipReason = skipReason
        self.credentialSelector = credentialSelector
        self.channel = channel
        if account != nil || appState != nil || locale != nil {
            details = RecipientDetails(account: account, accountID: accountID, appState: appState, locale: locale)
        }
    }

    /// The skip reason of a device left out of a push given another environment: a sandbox
    /// push reaches sandbox devices only, and says how many it left out, never silently.
    public static let otherEnvironment = "other_environment"

    /// Skips the entry `other_environment` when the push has an environment and the device
    /// is of the other one (a reason it already has, such as `DeviceInvalidated`, stays).
    public mutating func skipUnless(in environment: PushEnvironment?) {
        guard let environment, skipReason == nil, self.environment != environment else { return }
        skipReason = Self.otherEnvironment
    }

    /// The entry as a `DeliveryPolicy` sees it.
    public var recipient: Recipient {
        Recipient(
            deviceID: deviceID, token: token, environment: environment, account: account, accountID: accountID,
            locale: locale, appState: appState, credentialSelector: credentialSelector, channel: channel)
    }
}

/// What a `DeliveryPolicy` needs to know of a device beyond its token.
public final class RecipientDetails: Sendable, Hashable {
    public let account: String?
    /// The account's row (`AccountKey`), carried by the bound device.
    public let accountID: Int64?
    public let appState: AppState?
    public let locale: String?

    public init(account: String?, accountID: Int64? = nil, appState: AppState?, locale: String?) {
        self.account = account
        self.accountID = accountID
        self.appState = appState
        self.locale = locale
    }

    public static func == (a: RecipientDetails, b: RecipientDetails) -> Bool {
        a.account == b.account && a.accountID == b.accountID && a.appState == b.appState && a.locale == b.locale
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(account)
        hasher.combine(accountID)
        hasher.combine(appState)
        hasher.combine(locale)
    }
}

/// One device's recorded outcome (rows exist for failed, retried, held and skipped entries;
/// deliveries that succeeded first time are only counted).
public struct DeliveryRecord: Sendable, Hashable {
    public var id: Int64
    public var messageID: Int64
    public var deviceID: Int64?
    public var token: String
    public var environment: PushEnvironment
    public var state: DeliveryState
    public var reason: String?
    public var serviceMessageID: String?
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var updatedAt: Date
    /// The content decided for this device when it differs from the message's (a policy's
    /// per-receiver badge or alert); a retry resends exactly this content.
    public var content: PushContent?
    /// The device's credential selector when the delivery was decided.
    public var credentialSelector: String?
    /// The device's push service when the delivery was decided; a retry goes the same way.
    public var channel: PushChannel

    public init(
        id: Int64, messageID: Int64, deviceID: Int64?, token: String, environment: PushEnvironment,
        state: DeliveryState, reason: String?, serviceMessageID: String?, attempts: Int, nextAttemptAt: Date?,
        updatedAt: Date, content: PushContent? = nil, credentialSelector: String? = nil, channel: PushChannel
    ) {
        self.channel = channel
        self.id = id
        self.messageID = messageID
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.state = state
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.updatedAt = updatedAt
        self.content = content
        self.credentialSelector = credentialSelector
    }
}

/// A delivery row to insert with a progress flush.
public struct NewDelivery: Sendable, Hashable {
    public var deviceID: Int64?
    public var token: String
    public var environment: PushEnvironment
    public var state: DeliveryState
    public var reason: String?
    public var serviceMessageID: String?
    public var attempts: Int
    public var nextAttemptAt: Date?
    /// Kept only when it differs from the message's content (see `DeliveryRecord.content`).
    public var content: PushContent?
    public var credentialSelector: String?
    public var channel: PushChannel

    public init(
        deviceID: Int64?, token: String, environment: PushEnvironment, state: DeliveryState,
        reason: String?, serviceMessageID: String? = nil, attempts: Int, nextAttemptAt: Date? = nil,
        content: PushContent? = nil, credentialSelector: String? = nil, channel: PushChannel
    ) {
        self.channel = channel
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
        self.state = state
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.content = content
        self.credentialSelector = credentialSelector
    }
}

/// A service said a token is dead. Applied only if the device was not registered again after `at`.
public struct DeviceInvalidation: Sendable, Hashable {
    public var deviceID: Int64
    public var reason: String
    public var at: Date

    public init(deviceID: Int64, reason: String, at: Date) {
        self.deviceID = deviceID
        self.reason = reason
        self.at = at
    }
}

/// The parts of a message that change while it is sent, read in one snapshot without the
/// message's JSON columns: what a status poll needs from the store (the rest of a message
/// never changes after it is created).
public struct MessageProgressSnapshot: Sendable, Hashable {
    public var state: MessageState
    public var total: Int?
    public var startedAt: Date?
    public var completedAt: Date?
    /// The audience position up to which outcomes are committed (`MessageRecord.cursor`).
    public var cursor: Int64
    public var counts: DeliveryCounts
    public var failures: [String: Int]
    public var skips: [String: Int]
    /// Each slice's committed cursor, by slice number, for a message sent in slices
    /// (PostgreSQL); empty when `cursor` is the message's one cursor.
    public var sliceCursors: [Int64: Int64]

    public init(
        state: MessageState, total: Int?, startedAt: Date?, completedAt: Date?, cursor: Int64,
        counts: DeliveryCounts, failures: [String: Int], skips: [String: Int], sliceCursors: [Int64: Int64] = [:]
    ) {
        self.sliceCursors = sliceCursors
        self.state = state
        self.total = total
        self.startedAt = startedAt
        self.completedAt = completedAt
        self.cursor = cursor
        self.counts = counts
        self.failures = failures
        self.skips = skips
    }
}

extension MessageRecord {
    /// This record with the changing parts replaced by `snapshot`'s.
    public func updated(with snapshot: MessageProgressSnapshot) -> MessageRecord {
        var record = self
        record.state = snapshot.state
        record.total = snapshot.total
        record.startedAt = snapshot.startedAt
        record.completedAt = snapshot.completedAt
        record.cursor = snapshot.cursor
        record.counts = snapshot.counts
        record.failures = snapshot.failures
        record.skips = snapshot.skips
        return record
    }
}

/// Everything one dispatcher flush persists, in one transaction.
public struct MessageProgress: Sendable {
    public var messageID: Int64
    /// Every entry up to here now has its outcome in `counts`/`deliveries`.
    public var cursor: Int64
    /// Added to the persisted counts (queued here = new retry rows).
    public var counts: DeliveryCounts
    public var failures: [String: Int]
    /// Added to the persisted skip counts by reason.
    public var skips: [String: Int]
    public var deliveries: [NewDelivery]
    public var invalidations: [DeviceInvalidation]
    /// Set when this flush finishes the expansion.
    public var finalState: MessageState?
    /// First-attempt deliveries by channel (they leave no delivery row), for per-channel counts.
    public var deliveredByChannel: [PushChannel: Int]
    /// The requests the services accepted, by their ids, for the channels whose receipts may
    /// name a request instead of Tuisong's tag (`DeliverySettings.serviceRequestChannels`): one
    /// per request, not per device.
    public var serviceRequests: [ServiceRequest] = []
    /// The slice this flush belongs to and the claim it was sent under (`WorkQueue`); the store
    /// refuses the flush (`StoreError.Code.leaseLost`) when the claim is no longer held. nil:
    /// the whole message, unfenced (SQLite's single dispatcher, tests).
    public var slice: WorkSlice?

    public init(
        messageID: Int64, cursor: Int64, counts: DeliveryCounts = DeliveryCounts(),
        failures: [String: Int] = [:], skips: [String: Int] = [:], deliveries: [NewDelivery] = [],
        invalidations: [DeviceInvalidation] = [], finalState: MessageState? = nil,
        deliveredByChannel: [PushChannel: Int] = [:], slice: WorkSlice? = nil
    ) {
        self.slice = slice
        self.deliveredByChannel = deliveredByChannel
        self.messageID = messageID
        self.cursor = cursor
        self.counts = counts
        self.failures = failures
        self.skips = skips
        self.deliveries = deliveries
        self.invalidations = invalidations
        self.finalState = finalState
    }
}

/// The outcome of one retried delivery row.
public struct DeliveryUpdate: Sendable, Hashable {
    public var deliveryID: Int64
    public var messageID: Int64
    public var from: DeliveryState
    public var to: DeliveryState
    public var reason: String?
    public var serviceMessageID: String?
    public var attempts: Int
    public var nextAttemptAt: Date?
    public var invalidation: DeviceInvalidation?

    public init(
        deliveryID: Int64, messageID: Int64, from: DeliveryState, to: DeliveryState, reason: String?,
        serviceMessageID: String?, attempts: Int, nextAttemptAt: Date?, invalidation: DeviceInvalidation? = nil
    ) {
        self.deliveryID = deliveryID
        self.messageID = messageID
        self.from = from
        self.to = to
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.invalidation = invalidation
    }
}

/// Durable messages and deliveries.
public protocol MessageStore: Sendable {
    /// Commits the message; when this returns it survives a crash. A job with an
    /// `idempotencyKey` commits the key with the message in the same transaction; when the app
    /// already has a message under that key, created within `IdempotencyKey.lifetime`, nothing
    /// is created and that message's record is answered as it is now (its state may have moved
    /// on). Concurrent calls with one key create one message.
    func createMessage(_ job: PushJob, state: MessageState) async throws -> MessageRecord
    /// Deletes at most `limit` idempotency keys created before `before`, oldest first, in one
    /// transaction, and returns how many. The stores also call it themselves now and then while
    /// keys are being created; a key past its lifetime is ignored even before it is deleted.
    @discardableResult
    func forgetIdempotencyKeys(before: Date, limit: Int) async throws -> Int
    /// The message an app's idempotency key names, while the key is within its lifetime.
    func message(appID: Int64, idempotencyKey: String) async throws -> MessageRecord?
    func message(id: Int64) async throws -> MessageRecord?
    /// The changing parts of a message, cheaply (a status poll). nil: no such message.
    func messageProgress(id: Int64) async throws -> MessageProgressSnapshot?
    /// A message's committed outcomes per push service (what has been flushed; the live
    /// counts of a sending message are ahead of these).
    func channelCounts(messageID: Int64) async throws -> [PushChannel: DeliveryCounts]
    func message(appID: Int64, vendorMessageID: String) async throws -> MessageRecord?
    /// Recent messages of an app (or all apps), newest first.
    func messages(appID: Int64?, limit: Int) async throws -> [MessageRecord]
    /// Ids of messages to (re)start, oldest first, at most 100: queued or sending, and
    /// scheduled ones whose time has come. Ids only: the dispatcher reads each message it
    /// starts once, after the listing.
    func dispatchableMessageIDs(now: Date) async throws -> [Int64]
    /// Marks a message sending, with its expected total when known (nil leaves the total as it
    /// is). `false` when it was cancelled meanwhile.
    func startMessage(id: Int64, total: Int?, at: Date) async throws -> Bool
    /// Records the expected total of a message that is still sending (counted while it is
    /// sent); no effect on a finished one, whose total is what got an outcome.
    func setExpectedTotal(id: Int64, total: Int) async throws
    func setMessageState(id: Int64, _ state: MessageState, at: Date) async throws
    /// Cancels a message still `scheduled` (or `queued` and not started). `false` otherwise.
    func cancelScheduledMessage(id: Int64, at: Date) async throws -> Bool
    /// Persists one flush atomically.
    func recordProgress(_ progress: MessageProgress, at: Date) async throws
    /// Persists many flushes (of many messages) in one transaction: the engine's group commit,
    /// so a thousand one-device messages a second cost a few commits, not a thousand. Each is
    /// applied as `recordProgress` would apply it, all or nothing for that flush; one the store
    /// refuses (its slice's lease was lost) is answered with its error in its place and does not
    /// hold up the others. Throws only when nothing could be committed.
    func recordProgress(_ batch: [MessageProgress], at: Date) async throws -> [(any Error)?]
    /// Deletes the badge grants (`AccountStore.grantBadges`) of every message that is no longer
    /// sending, a few thousand rows per transaction so that other writes are not held up behind
    /// a million-account push. Returns how many it deleted.
    @discardableResult
    func forgetFinishedBadgeGrants() async throws -> Int
    /// Deletes the badge grants of `messages` that are no longer sending (one another node still
    /// sends keeps them), in the same bounded transactions: what the engine asks for as its
    /// messages finish, without walking past every message still sending as
    /// `forgetFinishedBadgeGrants` does. Returns how many it deleted.
    @discardableResult
    func forgetBadgeGrants(ofMessages messages: [Int64]) async throws -> Int

    /// The next page of the message's audience after `cursor`, invalidated devices left out.
    /// With an `environment`, devices of the other environment are in the page, skipped
    /// `AudienceEntry.otherEnvironment` (of every channel alike).
    /// `withRecipientDetails` also fills each device's account, app state and locale (for a
    /// `DeliveryPolicy`); `accounts`/`allAccounts` pages always carry them.
    func audiencePage(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after cursor: Int64, limit: Int,
        withRecipientDetails: Bool
    ) async throws -> [AudienceEntry]
    /// Several audience pages, read together (one snapshot where the database allows): the
    /// first pages of many small messages cost one round trip, not one each.
    func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]]
    /// How many entries the audience has now (`environment` nil), or how many of its devices
    /// are in `environment` (a list audience: its entries, whatever their environment), at
    /// most `limit` (nil: all; 1 asks whether there is one without counting a whole tag).
    func audienceCount(appID: Int64, audience: Audience, environment: PushEnvironment?, upTo limit: Int?)
        async throws -> Int

    /// Claims due retry rows (`queued` with next_attempt_at ≤ now) by moving them to `sending`.
    func claimDueDeliveries(now: Date, limit: Int) async throws -> [DeliveryRecord]
    /// Rows left `sending` by a crash go back to `queued` (at-least-once). Returns how many.
    func requeueInterruptedDeliveries() async throws -> Int
    func applyDeliveryUpdates(_ updates: [DeliveryUpdate], at: Date) async throws
    /// Held rows of an app's devices in an environment, on the channels whose credentials serve
    /// an environment (`ChannelCatalog.environmentChannels`), go back to `queued`, due now (a
    /// credential was fixed).
    func releaseHeldDeliveries(appID: Int64, environment: PushEnvironment, now: Date) async throws -> Int
    /// Held rows of an app's devices on `channel` go back to `queued`, due now (a credential for
    /// that push service was added or fixed).
    func releaseHeldDeliveries(appID: Int64, channel: PushChannel, now: Date) async throws -> Int
    /// Held rows whose hold ends (`next_attempt_at`, the message's expiry) at or before `now`
    /// become `failed` with their reason, at most `limit` of them; a message left with nothing
    /// pending is completed. Returns how many rows it failed.
    @discardableResult
    func expireHeldDeliveries(now: Date, limit: Int) async throws -> Int
    /// What a message still waits for: its queued, sending and held rows by state and reason,
    /// with the earliest time a queued row is due (or a held row expires).
    func pendingDeliveries(messageID: Int64) async throws -> [PendingDeliveries]
    /// Held rows of an app's devices registered with `selector` go back to `queued`, due now,
    /// whatever their environment (a credential with that selector was added).
    func releaseHeldDeliveries(appID: Int64, selector: String, now: Date) async throws -> Int
    func deliveries(messageID: Int64, state: DeliveryState?, cursor: String?, limit: Int) async throws
        -> Page<DeliveryRecord>
}

/// Deliveries of one message that have no final outcome yet, of one state and reason
/// (`MessageStore.pendingDeliveries`): what a message that is not completed waits for.
public struct PendingDeliveries: Sendable, Hashable {
    /// `queued` (a retry, a daily quota), `sending` or `held` (a missing or refused credential).
    public var state: DeliveryState
    public var reason: String?
    public var count: Int
    /// Queued: when the first of them is due again. Held: when the first of them expires with
    /// its message (nil for rows held before holds expired).
    public var until: Date?

    public init(state: DeliveryState, reason: String?, count: Int, until: Date?) {
        self.state = state
        self.reason = reason
        self.count = count
        self.until = until
    }
}

/// One audience page to read (`MessageStore.audiencePages`), as `audiencePage` takes it.
public struct AudiencePageRequest: Sendable, Hashable {
    public var appID: Int64
    public var audience: Audience
    public var environment: PushEnvironment?
    public var after: Int64
    public var limit: Int
    public var withRecipientDetails: Bool

    public init(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after: Int64, limit: Int,
        withRecipientDetails: Bool
    ) {
        self.appID = appID
        self.audience = audience
        self.environment = environment
        self.after = after
        self.limit = limit
        self.withRecipientDetails = withRecipientDetails
    }
}

extension MessageStore {
    /// One flush after another, each in its own transaction (a store without a batch of its own).
    public func recordProgress(_ batch: [MessageProgress], at: Date) async throws -> [(any Error)?] {
        var results: [(any Error)?] = []
        results.reserveCapacity(batch.count)
        for progress in batch {
            do {
                try await recordProgress(progress, at: at)
                results.append(nil)
            } catch let error as StoreError where error.code == .leaseLost {
                results.append(error)
            }
        }
        return results
    }

    /// How many entries the audience has now (every environment's devices alike).
    public func audienceCount(appID: Int64, audience: Audience) async throws -> Int {
        try await audienceCount(appID: appID, audience: audience, environment: nil, upTo: nil)
    }

    /// One page after another (a store without a batch of its own).
    public func audiencePages(_ requests: [AudiencePageRequest]) async throws -> [[AudienceEntry]] {
        var pages: [[AudienceEntry]] = []
        pages.reserveCapacity(requests.count)
        for r in requests {
            pages.append(
                try await audiencePage(
                    appID: r.appID, audience: r.audience, environment: r.environment, after: r.after, limit: r.limit,
                    withRecipientDetails: r.withRecipientDetails))
        }
        return pages
    }

    /// The page without recipient details (the one-payload path).
    public func audiencePage(
        appID: Int64, audience: Audience, environment: PushEnvironment?, after cursor: Int64, limit: Int
    ) async throws -> [AudienceEntry] {
        try await audiencePage(
            appID: appID, audience: audience, environment: environment, after: cursor, limit: limit,
            withRecipientDetails: false)
    }
}

/// What a credential serves, and so what deliveries are held on for want of one: an
/// environment (uploaded credentials that serve one), or a push service's channel.
public enum CredentialRoute: Sendable, Hashable {
    case environment(PushEnvironment)
    case channel(PushChannel)
}

extension MessageStore {
    /// What was held on `routes`, and on `selector` (devices held for want of a selector may be
    /// of another environment), back to `queued`, due now: a credential was added or deleted, so
    /// the one that serves now sends it or holds it again. Returns how many rows.
    public func releaseHeldDeliveries(appID: Int64, routes: [CredentialRoute], selector: String?, now: Date)
        async throws -> Int
    {
        var released = 0
        for route in routes {
            switch route {
            case .environment(let environment):
                released += try await releaseHeldDeliveries(appID: appID, environment: environment, now: now)
            case .channel(let channel):
                released += try await releaseHeldDeliveries(appID: appID, channel: channel, now: now)
            }
        }
        if let selector {
            released += try await releaseHeldDeliveries(appID: appID, selector: selector, now: now)
        }
        return released
    }
}
