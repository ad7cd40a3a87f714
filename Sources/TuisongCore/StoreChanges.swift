import Synchronization

/// Something a node changed that other nodes keep cached or wait for. Published after the
/// change is committed; every node's subscriber drops what it cached (or, for `wake`, looks
/// for new work at once).
public enum StoreChange: Sendable, Hashable {
    /// An app was created, updated (bundle id, key, vendor settings) or deleted.
    case app(Int64)
    /// An app's uploaded file credentials (the transport kit's `CredentialRecord`s) were added,
    /// deleted or changed state.
    case credentials(appID: Int64)
    /// An app's credentials of a declared form were added, deleted or changed state.
    case channelCredentials(appID: Int64)
    /// Gateway-wide settings (`SettingsStore`) changed.
    case settings
    /// New work was queued (a message submitted): an idle node should claim it now.
    case wake
    /// An app's webhook endpoints were added, changed or deleted.
    case webhooks(appID: Int64)
    /// An app's receipt callback credentials (`ReceiptSettingsStore`) were set or rotated.
    case receiptCallbackCredentials(appID: Int64)

    /// The text form sent between nodes: `app:7`, `credentials:7`, `channel_credentials:7`,
    /// `settings`, `wake`, `webhooks:7`, `receipt_callback_credentials:7`.
    public var payload: String {
        switch self {
        case .app(let id): "app:\(id)"
        case .credentials(let appID): "credentials:\(appID)"
        case .channelCredentials(let appID): "channel_credentials:\(appID)"
        case .settings: "settings"
        case .wake: "wake"
        case .webhooks(let appID): "webhooks:\(appID)"
        case .receiptCallbackCredentials(let appID): "receipt_callback_credentials:\(appID)"
        }
    }

    /// Parses `payload`; nil for a text this build does not know (a newer node's).
    public init?(payload: String) {
        switch payload {
        case "settings": self = .settings
        case "wake": self = .wake
        default:
            guard let colon = payload.firstIndex(of: ":"),
                let id = Int64(payload[payload.index(after: colon)...])
            else { return nil }
            switch payload[..<colon] {
            case "app": self = .app(id)
            case "credentials": self = .credentials(appID: id)
            case "channel_credentials": self = .channelCredentials(appID: id)
            case "webhooks": self = .webhooks(appID: id)
            case "receipt_callback_credentials": self = .receiptCallbackCredentials(appID: id)
            default: return nil
            }
        }
    }
}

/// Tells every node of the gateway (every process on the database) what changed.
///
/// SQLite has one process per file: publishing calls this process's subscribers. PostgreSQL
/// sends the change with `NOTIFY` and every node's listener hands it to its subscribers,
/// the publishing node's included.
public protocol StoreChangeFeed: Sendable {
    /// Sends `change` to every subscriber of every node. Never fails: a change that cannot
    /// be sent is logged, and caches still expire on their own.
    func publish(_ change: StoreChange) async
    /// Calls `handler` with each change published from now on, on a thread of the feed's
    /// (keep it short). `nil` means "resynchronise everything": the feed may have missed
    /// changes (its PostgreSQL listener reconnected), so drop every cache.
    func subscribe(_ handler: @escaping @Sendable (StoreChange?) -> Void)
    /// Whether storing a queued message already tells every node `wake`, with the commit that
    /// stores it: then whoever submitted the message need not publish it.
    var announcesQueuedMessages: Bool { get }
}

extension StoreChangeFeed {
    public var announcesQueuedMessages: Bool { false }
}

/// The subscribers of one process: what `publish` calls on SQLite, and what the PostgreSQL
/// listener hands each notification to.
public final class LocalChangeFeed: StoreChangeFeed {
    private let handlers = Mutex<[@Sendable (StoreChange?) -> Void]>([])

    public init() {}

    public func publish(_ change: StoreChange) async {
        deliver(change)
    }

    public func subscribe(_ handler: @escaping @Sendable (StoreChange?) -> Void) {
        handlers.withLock { $0.append(handler) }
    }

    /// Whether anything subscribed yet.
    public var hasSubscribers: Bool { handlers.withLock { !$0.isEmpty } }

    /// Calls every subscriber with `change` (nil: resynchronise), on the caller's thread.
    public func deliver(_ change: StoreChange?) {
        for handler in handlers.withLock({ $0 }) { handler(change) }
    }
}
