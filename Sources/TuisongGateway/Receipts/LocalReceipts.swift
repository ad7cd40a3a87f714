import Foundation
import Logging
import Synchronization
import TuisongCore
import TuisongHTTPClient
import TuisongLookAlikes
import TuisongTransportKit

/// Records in the store, before they are sent, the requests to many tokens that ask for
/// receipts by one `param` (`ReceiptSettings.sends`).
struct StoreReceiptSendLog: ReceiptSendLog {
    let store: any ReceiptStore

    func recordReceiptSend(_ send: ReceiptSend) async throws -> Int64 { try await store.recordReceiptSend(send) }
}

/// The base URL the services post receipts to: `receipts.public_url`, or in local mode with none
/// set, the gateway's own listener once its port is bound (the transports are made before the
/// listener starts, so they read it late through `ReceiptSettings`).
public final class ReceiptBaseURL: Sendable {
    private let value: Mutex<String>

    init(configured: String) { value = Mutex(configured) }

    var current: String { value.withLock { $0 } }

    /// Names the listener at `host:port`, unless a URL was configured.
    func bindListener(host: String, port: Int) {
        value.withLock { url in
            guard url.isEmpty else { return }
            url = Self.listenerURL(host: host, port: port)
        }
    }

    /// `http://host:port` of a listener, as a client on this machine reaches it.
    static func listenerURL(host: String, port: Int) -> String {
        let reachable: String
        switch host {
        case "", "0.0.0.0": reachable = "127.0.0.1"
        case "::": reachable = "[::1]"
        default: reachable = host.contains(":") ? "[\(host)]" : host
        }
        return "http://\(reachable):\(port)"
    }

    /// The base URL a gateway started with `config` gives the services: `receipts.public_url`,
    /// else in local mode its own listener; empty when receipts are off. (The CLI's view: a
    /// listener on port 0 is not known until it is bound.)
    public static func configured(_ config: GatewayConfig) -> String {
        if !config.receipts.publicURL.isEmpty { return config.receipts.publicURL }
        guard config.localMode.enabled, config.listen.port != 0 else { return "" }
        return listenerURL(host: config.listen.host, port: config.listen.port)
    }
}

/// Local mode's receipt configurations, as an operator would have entered them in each service's
/// console (the receipt URL of the app's channel, and the app's callback user name and key),
/// and the poster of the look-alikes' receipts. The look-alikes stand in for every
/// app's service at once, so the app is found from the push's tag (its message).
final class LocalReceiptSink: LookAlikeReceiptSink {
    let messages: any MessageStore & ReceiptStore
    let settings: ReceiptSettings
    let callbackCredentials: ReceiptCallbackCredentialService
    let client: HTTPClient
    let logger: Logger

    init(
        messages: any MessageStore & ReceiptStore, settings: ReceiptSettings,
        callbackCredentials: ReceiptCallbackCredentialService, logger: Logger
    ) throws {
        self.messages = messages
        self.settings = settings
        self.callbackCredentials = callbackCredentials
        self.client = try HTTPClient(label: "receipts-local", logger: logger)
        self.logger = logger
    }

    func configuration(service: AndroidPushService, tag: String) async -> LookAlikeReceiptConfiguration? {
        guard let channel = PushChannel(rawValue: service.rawValue), !settings.publicURL.isEmpty,
            let appID = await appID(tag: tag)
        else { return nil }
        var credentials: CallbackCredentials?
        if callbackCredentials.uses(channel) {
            credentials = try? await callbackCredentials.credentials(appID: appID, channel: channel)
        }
        return LookAlikeReceiptConfiguration(
            url: settings.url(channel: channel, appID: appID), callbackUserName: credentials?.userName ?? "",
            callbackKey: credentials?.key ?? "")
    }

    /// The app of the push a tag names: a message's (`<id>.<MAC>`, verified), a message's to one
    /// token (`t<id>.<MAC>`: the gateway verifies it with the receipt's token) or a recorded
    /// send's (`s<id>.<MAC>`).
    private func appID(tag: String) async -> Int64? {
        guard let dot = tag.firstIndex(of: ".") else { return nil }
        let head = tag[..<dot]
        switch head.first {
        case "s":
            guard let id = Int64(head.dropFirst()), let send = try? await messages.receiptSend(id: id) else {
                return nil
            }
            return send.appID
        case "t":
            guard let id = Int64(head.dropFirst()) else { return nil }
            return try? await messages.message(id: id)?.appID
        default:
            guard let id = Int64(head), let message = try? await messages.message(id: id),
                settings.keys.messageID(tag: tag, appID: message.appID) == id
            else { return nil }
            return message.appID
        }
    }

    func post(_ post: LookAlikeReceiptPost) async { await Self.send(post, client: client, logger: logger) }

    func shutdown() { client.shutdown() }

    /// Sends one look-alike's receipt POST, logging a refusal (a look-alike does not retry).
    static func send(_ post: LookAlikeReceiptPost, client: HTTPClient, logger: Logger) async {
        let result = await client.execute(
            HTTPClientRequest(url: post.url, headers: post.headers, body: post.body, timeout: .seconds(10)))
        switch result {
        case .success(let response) where response.status == 200: break
        case .success(let response):
            logger.notice(
                "a look-alike's receipt was refused", metadata: ["url": "\(post.url)", "status": "\(response.status)"])
        case .failure(let error):
            logger.notice(
                "a look-alike's receipt was not delivered", metadata: ["url": "\(post.url)", "error": "\(error)"])
        }
    }
}

/// The look-alike command's `--receipts FILE`: the look-alikes post the receipts of accepted pushes as
/// the services do once an operator entered an app's receipt configuration in their consoles,
/// the one `tuisong credential show --app ID` prints (FILE holds that output). FILE is read for
/// each push that asks for receipts, and while it is absent none is sent: a benchmark compares
/// the same push with and without receipts against one look-alike.
public final class FileReceiptSink: LookAlikeReceiptSink {
    let path: String
    let client: HTTPClient
    let logger: Logger

    public init(path: String, logger: Logger) throws {
        self.path = path
        self.client = try HTTPClient(label: "receipts-look-alike", logger: logger)
        self.logger = logger
    }

    /// What the file held when last read, per service, and which version of the file that was:
    /// it is read again only once it changed (the look-alikes ask for every request a push
    /// makes, and reading and parsing it each time was a third of their work for receipts).
    private let lastRead = Mutex<(version: FileVersion, receipts: [String: LookAlikeReceiptConfiguration])?>(nil)

    /// A file's identity and last change, as `stat` tells them.
    private struct FileVersion: Equatable {
        var inode: UInt64
        var size: Int64
        var changedSeconds: Int
        var changedNanoseconds: Int
    }

    public func configuration(service: AndroidPushService, tag: String) async -> LookAlikeReceiptConfiguration? {
        read()?[service.rawValue]
    }

    /// The file's receipt configurations by channel; nil while it is absent or unreadable.
    private func read() -> [String: LookAlikeReceiptConfiguration]? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        let version = FileVersion(
            inode: UInt64(status.st_ino), size: Int64(status.st_size), changedSeconds: status.st_mtim.tv_sec,
            changedNanoseconds: status.st_mtim.tv_nsec)
        if let last = lastRead.withLock({ $0 }), last.version == version { return last.receipts }
        guard let data = FileManager.default.contents(atPath: path),
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let entries = object["receipts"] as? [[String: Any]]
        else { return nil }
        // A channel's first entry is its configuration (none while its url is empty).
        var seen: Set<String> = []
        var receipts: [String: LookAlikeReceiptConfiguration] = [:]
        for entry in entries {
            guard let channel = entry["channel"] as? String, seen.insert(channel).inserted,
                let url = entry["url"] as? String, !url.isEmpty
            else { continue }
            receipts[channel] = LookAlikeReceiptConfiguration(
                url: url, callbackUserName: entry["callback_user_name"] as? String ?? "",
                callbackKey: entry["callback_key"] as? String ?? "")
        }
        lastRead.withLock { $0 = (version, receipts) }
        return receipts
    }

    public func post(_ post: LookAlikeReceiptPost) async {
        guard FileManager.default.fileExists(atPath: path) else { return }
        await LocalReceiptSink.send(post, client: client, logger: logger)
    }
}
