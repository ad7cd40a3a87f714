import Foundation

/// IM accounts: what the IM vendors share. An account is an app-scoped user id (a
/// vendor's identifier or username). Devices are bound to at most one account;
/// binding a device that belongs to another account moves it. Everything else an IM vendor
/// keeps (profiles, groups, push modes, passwords) lives in its plugin's own tables.
public protocol AccountStore: Sendable {
    /// Creates the account if it does not exist. `true` when this call created it.
    @discardableResult
    func createAccount(appID: Int64, account: String) async throws -> Bool
    /// The accounts among `accounts` that exist.
    func existingAccounts(appID: Int64, among accounts: [String]) async throws -> Set<String>
    /// Deletes the account, its app state and badge; its devices are unbound and stop
    /// receiving. `false` when there was no such account.
    func deleteAccount(appID: Int64, account: String) async throws -> Bool
    /// Accounts of the app in id order, after `cursor` (an opaque value from a previous page).
    func accounts(appID: Int64, cursor: String?, limit: Int) async throws -> Page<String>

    /// Registers the device (or updates the one with the same token) and binds it to
    /// `account`, creating the account if needed; a device bound to another account moves.
    /// `credentialSelector` is kept with the device (nil clears it).
    func bindDevice(
        appID: Int64, account: String, registration: DeviceRegistration, credentialSelector: String?
    ) async throws -> Device
    /// Unbinds the device with this token from whatever account holds it. `false` if none did.
    func unbindDevice(appID: Int64, token: DeviceToken) async throws -> Bool
    /// Valid devices bound to the account, in id order.
    func devices(appID: Int64, account: String) async throws -> [Device]

    func setAppState(appID: Int64, account: String, _ state: AppState) async throws
    func appState(appID: Int64, account: String) async throws -> AppState?

    /// Adds one to each named account's badge counter and returns the new values, atomically
    /// and durably: messages decided concurrently for one account get distinct values. An
    /// account named twice is incremented twice (its last value returned).
    func incrementBadges(appID: Int64, accounts: [String]) async throws -> [String: Int]
    /// The badge each account gets for this message, by name: its counter is incremented once
    /// per message, in the same transaction that remembers the grant, so a page decided again
    /// (after a crash or a failed write) and an account whose devices fall on several pages of
    /// the message are not counted again; they get the counter as it is now (which a later
    /// message or a reset may have moved: what the device should show). Accounts are named by
    /// their row (`Recipient.accountKey`, carried by each bound device), so the per-page work
    /// needs no lookup by name. An account deleted since gets no badge. Pages of one message
    /// may call this concurrently. The grants are forgotten once the message has finished
    /// sending (`forgetFinishedBadgeGrants`).
    func grantBadges(appID: Int64, messageID: Int64, accounts: [AccountKey]) async throws -> [String: Int]
    /// `grantBadges(appID:messageID:accounts:)` for several pages at once (of several messages,
    /// or several pages of one): one answer per request, in order, each what that call would
    /// answer: an account several messages of the batch count is incremented once for each
    /// and gets a distinct value for each; a page asking for a grant another page gave (in the
    /// batch or before it) gets the counter as it is then. Atomic as a whole: every grant of
    /// the batch is recorded with its increment, or none.
    func grantBadges(_ requests: [BadgeGrantRequest]) async throws -> [[String: Int]]
    /// "The client reports unread = N"; 0 resets.
    func setBadge(appID: Int64, account: String, to value: Int) async throws
    func badge(appID: Int64, account: String) async throws -> Int
}

/// One page's call of `AccountStore.grantBadges(_:)`.
public struct BadgeGrantRequest: Sendable, Hashable {
    public var appID: Int64
    public var messageID: Int64
    public var accounts: [AccountKey]

    public init(appID: Int64, messageID: Int64, accounts: [AccountKey]) {
        self.appID = appID
        self.messageID = messageID
        self.accounts = accounts
    }
}

/// An IM account as a bound device names it: its `accounts` row id and its name.
public struct AccountKey: Sendable, Hashable {
    public var id: Int64
    public var name: String

    public init(id: Int64, name: String) {
        self.id = id
        self.name = name
    }
}
