import Foundation
import TuisongCore
import TuisongCrypto
import TuisongTransportKit

/// The apps' callback credentials with the services that sign their receipts (each transport
/// whose `ReceiptDeclaration.usesCallbackCredentials`): per app
/// and service, made on first need (a new user name `tuisong<app id>` and a random key; for an
/// app older than stored credentials, the pair earlier builds derived from the master key, so a
/// receipt configuration entered then keeps verifying), or set by the operator to what they
/// typed into the service's console. The key is sealed at rest under the master key, bound to
/// its app and service; it is shown to an authenticated operator (who must copy it into the
/// service's console) and never logged.
public struct ReceiptCallbackCredentialService: Sendable {
    let store: any ReceiptSettingsStore
    let box: SecretBox
    let keys: ReceiptKeys
    let registry: TransportRegistry
    let clock: any Clock

    public init(
        store: any ReceiptSettingsStore, masterKey: MasterKey, registry: TransportRegistry, clock: any Clock
    ) {
        self.store = store
        self.box = masterKey.box
        self.keys = ReceiptKeys(masterKey: masterKey)
        self.registry = registry
        self.clock = clock
    }

    /// The channels whose services sign receipts with callback credentials.
    public var channels: [PushChannel] {
        registry.declarations.filter { $0.receipts?.usesCallbackCredentials == true }.map(\.channel.channel)
    }

    /// Whether `channel`'s service signs with callback credentials.
    public func uses(_ channel: PushChannel) -> Bool { channels.contains(channel) }

    /// The app's credentials with `channel`'s service, made and stored if it has none yet.
    /// Throws `StoreError.notFound` for an app that does not exist.
    public func credentials(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        let stored = try await store.receiptCallbackCredentials(appID: appID)
        if let record = stored.byChannel[channel] { return try open(record) }
        let made =
            stored.predatesStoredCredentials
            ? keys.derivedCallbackCredentials(appID: appID, channel: channel)
            : CallbackCredentials(userName: "tuisong\(appID)", key: CallbackCredentials.randomKey())
        // Another node (or request) may store one first: the stored one wins everywhere.
        return try open(try await store.addReceiptCallbackCredential(try seal(made, appID: appID, channel: channel)))
    }

    /// Puts `credentials` in place (what the operator typed into the service's console).
    public func set(_ credentials: CallbackCredentials, appID: Int64, channel: PushChannel) async throws {
        try await store.replaceReceiptCallbackCredential(try seal(credentials, appID: appID, channel: channel))
    }

    /// A new random key under the app's current user name; the old key stops verifying at once
    /// (the operator enters the new one in the service's console).
    public func rotate(appID: Int64, channel: PushChannel) async throws -> CallbackCredentials {
        let current = try await credentials(appID: appID, channel: channel)
        let rotated = CallbackCredentials(userName: current.userName, key: CallbackCredentials.randomKey())
        try await set(rotated, appID: appID, channel: channel)
        return rotated
    }

    /// What the operator registers in each service's receipt configuration for the app: the
    /// receipt URL under `baseURL` and, for a service that signs, the callback user name and key
    /// (made on first need). One object per transport that declares receipts.
    public func registrations(appID: Int64, baseURL: String) async throws -> [[String: String]] {
        let base = baseURL.hasSuffix("/") ? String(baseURL.dropLast()) : baseURL
        var result: [[String: String]] = []
        for declaration in registry.declarations {
            guard let receipts = declaration.receipts else { continue }
            let channel = declaration.channel.channel
            let url = base.isEmpty ? "" : "\(base)/receipts/\(channel.rawValue)/\(appID)"
            var credentials: CallbackCredentials?
            if receipts.usesCallbackCredentials {
                credentials = try await self.credentials(appID: appID, channel: channel)
            }
            var fields =
                receipts.consoleRegistration?(url, credentials)
                ?? ["url": url].merging(
                    credentials.map { ["callback_user_name": $0.userName, "callback_key": $0.key] } ?? [:]
                ) { $1 }
            fields["channel"] = channel.rawValue
            if url.isEmpty { fields["url"] = "" }
            result.append(fields)
        }
        return result
    }

    private func associatedData(appID: Int64, channel: PushChannel) -> [UInt8] {
        Array("receipt-callback-key:\(appID):\(channel.rawValue)".utf8)
    }

    private func seal(_ credentials: CallbackCredentials, appID: Int64, channel: PushChannel) throws
        -> ReceiptCallbackCredential
    {
        ReceiptCallbackCredential(
            appID: appID, channel: channel, userName: credentials.userName,
            encryptedKey: try box.seal(
                Array(credentials.key.utf8), associatedData: associatedData(appID: appID, channel: channel)),
            updatedAt: clock.now)
    }

    private func open(_ record: ReceiptCallbackCredential) throws -> CallbackCredentials {
        let key = try box.open(
            record.encryptedKey, associatedData: associatedData(appID: record.appID, channel: record.channel))
        return CallbackCredentials(userName: record.userName, key: String(decoding: key, as: UTF8.self))
    }
}

extension ReceiptKeys {
    /// The receipt keys derived from the master key (every node derives the same).
    public init(masterKey: MasterKey) { self.init(root: masterKey.box.derivedKey("receipts")) }
}
