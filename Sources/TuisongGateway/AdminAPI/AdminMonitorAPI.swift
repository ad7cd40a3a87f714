import Foundation
import TuisongCore
import TuisongHTTP
import TuisongTransportKit

/// The delivery monitor: running messages with live counts, the newest messages, failures by
/// reason, deliveries per second over the last minutes, and credentials that fail or expire.
struct AdminMonitorAPI: Sendable {
    let api: AdminAPI

    var store: any AdminStore { api.store }
    static let failureWindow: TimeInterval = 3600
    static let scanLimit = 5000

    func register(on router: Router) {
        api.add(.GET, "/monitor", on: router) { request in try await monitor(request) }
    }

    /// `GET /monitor?minutes=15&bucket=10`
    private func monitor(_ request: Request) async throws -> Response {
        let minutes = try Self.parameter(request, "minutes", default: 15, range: 1...120)
        let bucketSeconds = try Self.parameter(request, "bucket", default: 10, range: 1...600)
        let now = api.clock.now
        let window = TimeInterval(minutes * 60)
        let push = AdminPushAPI(api: api)

        let activity = try await store.messageActivity(
            since: now.addingTimeInterval(-window), scanLimit: Self.scanLimit)
        var live: [Int64: MessageStatus] = [:]
        var running: [[String: Any]] = []
        for item in activity where item.state == .sending {
            guard let status = try await push.status(item.id) else { continue }
            live[item.id] = status
            running.append(try await view(status))
        }
        let rate = Self.rate(
            activity, liveDelivered: live.mapValues(\.counts.delivered), now: now, window: window,
            bucketSeconds: bucketSeconds)

        var recent: [[String: Any]] = []
        for record in try await store.messages(appID: nil, limit: 10) {
            recent.append(try await view(try await push.liveStatus(record)))
        }
        let failures = try await store.failureReasons(
            since: now.addingTimeInterval(-Self.failureWindow), scanLimit: Self.scanLimit)
        let skips = try await store.skipReasons(
            since: now.addingTimeInterval(-Self.failureWindow), scanLimit: Self.scanLimit)
        let failuresByChannel = try await store.failureReasonsByChannel(
            since: now.addingTimeInterval(-Self.failureWindow), scanLimit: Self.scanLimit)

        return .json(object: [
            "now": ISO8601.string(now),
            "window_seconds": Int(window),
            "bucket_seconds": bucketSeconds,
            "rate": rate,
            "running": running,
            "recent": recent,
            "failures": failures,
            // The same failures per push service: one service's `Unregistered` is not another's.
            "failures_by_channel": failuresByChannel.map {
                ["channel": $0.channel.rawValue, "reason": $0.reason, "count": $0.count] as [String: Any]
            },
            "skips": skips,
            "failures_window_seconds": Int(Self.failureWindow),
            "credentials": try await credentialAlerts(now: now),
        ])
    }

    /// A message as the console lists it, with its committed counts per channel
    /// (`{"<channel>": {"delivered": 120, …}, "<receipting channel>": {"delivered": 80, "arrived": 75, …}}`; a
    /// channel without deliveries or receipts is absent) and its receipts' totals.
    private func view(_ status: MessageStatus) async throws -> [String: Any] {
        try await AdminPushAPI(api: api).withReceipts(
            AdminPushAPI.view(status, detailed: false, config: api.config), messageID: status.record.id)
    }

    private static func parameter(_ request: Request, _ name: String, default value: Int, range: ClosedRange<Int>)
        throws -> Int
    {
        guard let raw = request.query[name], !raw.isEmpty else { return value }
        guard let parsed = Int(raw), range.contains(parsed) else {
            throw AdminError.invalid(name, "\(name) must be \(range.lowerBound)–\(range.upperBound)")
        }
        return parsed
    }

    /// Deliveries per second in consecutive buckets ending now. Deliveries are counted per
    /// message, not timestamped one by one, so each message's delivered count is spread
    /// evenly over the time it was sending (start → completion, or → now while it runs):
    /// exact for the total, an even approximation within one message.
    static func rate(
        _ activity: [MessageActivity], liveDelivered: [Int64: Int], now: Date, window: TimeInterval,
        bucketSeconds: Int
    ) -> [[String: Any]] {
        let bucket = TimeInterval(bucketSeconds)
        let count = max(1, Int((window / bucket).rounded(.up)))
        let end = now.timeIntervalSince1970
        let start = end - Double(count) * bucket
        var totals = [Double](repeating: 0, count: count)
        for item in activity {
            let delivered = Double(liveDelivered[item.id] ?? item.counts.delivered)
            guard delivered > 0 else { continue }
            let from = (item.startedAt ?? item.createdAt).timeIntervalSince1970
            let to = item.state == .sending ? end : (item.completedAt?.timeIntervalSince1970 ?? end)
            if to - from < 0.001 {
                // Finished within a millisecond: all of it in one bucket.
                let index = Int(((to - start) / bucket).rounded(.down))
                if (0..<count).contains(index) { totals[index] += delivered }
                continue
            }
            let perSecond = delivered / (to - from)
            var index = max(0, Int(((from - start) / bucket).rounded(.down)))
            while index < count {
                let bucketStart = start + Double(index) * bucket
                let overlap = min(to, bucketStart + bucket) - max(from, bucketStart)
                if bucketStart >= to { break }
                if overlap > 0 { totals[index] += perSecond * overlap }
                index += 1
            }
        }
        return totals.enumerated().map { index, total in
            [
                "t": ISO8601.string(Date(timeIntervalSince1970: start + Double(index) * bucket)),
                "per_second": (total / bucket * 100).rounded() / 100,
            ]
        }
    }

    /// Credentials failing now (most urgent) and uploaded certificates that expire within 30
    /// days (the others do not expire). Failing now: refused by its service and still the one its
    /// route sends with (its channel, environment and selector); one replaced by a working
    /// credential holds nothing and is not counted. Each carries its `channel`, and `meaning`:
    /// what its service's code says (from the transport's declared `serviceCodes`), or null;
    /// `meaning_text` the same in both of the console's languages (`{"en", "zh"}`).
    func credentialAlerts(now: Date) async throws -> [String: Any] {
        let registry = api.config.transports.registry
        func explain(_ view: inout [String: Any], _ channel: PushChannel, _ reason: String?) {
            let meaning = reason.flatMap { registry.declaration(of: channel)?.meaning(of: $0) }
            view["meaning"] = meaning?.en ?? NSNull()
            view["meaning_text"] = meaning?.json ?? NSNull()
        }
        var failing: [[String: Any]] = []
        var expiring: [[String: Any]] = []
        for app in try await store.apps() {
            let credentials = try await store.credentials(appID: app.id)
            let uploadedChannel = registry.uploadedFilesChannel
            let active = AdminCredentialView.activeIDs(credentials)
            for credential in credentials {
                var view = AdminCredentialView.object(credential, now: now)
                view["app_name"] = app.name
                view["channel"] = uploadedChannel?.rawValue ?? NSNull()
                if credential.isFailing, active.contains(credential.id) {
                    if let uploadedChannel { explain(&view, uploadedChannel, credential.statusReason) }
                    failing.append(view)
                }
                if let expires = credential.expiresAt,
                    expires.timeIntervalSince(now) < AdminCredentialView.warningWindow, active.contains(credential.id)
                {
                    expiring.append(view)
                }
            }
            let channelCredentials = try await store.formCredentials(appID: app.id)
            let activeChannel = ChannelCredentialView.activeIDs(channelCredentials)
            for credential in channelCredentials where credential.isFailing && activeChannel.contains(credential.id) {
                var view = ChannelCredentialView.object(credential)
                view["app_name"] = app.name
                explain(&view, credential.channel, credential.statusReason)
                failing.append(view)
            }
        }
        return ["failing": failing, "expiring": expiring]
    }
}

/// How a credential shows in the console: everything but the secret.
enum AdminCredentialView {
    static let warningWindow: TimeInterval = 30 * 86400

    /// The uploaded credentials pushes go through: for each selector and environment, the newest
    /// working credential serving the environment, else the newest (as their transport
    /// picks; a device with a selector none serves in its environment uses one of the other).
    static func activeIDs(_ records: [CredentialRecord]) -> Set<Int64> {
        var active: Set<Int64> = []
        for (selector, group) in Dictionary(grouping: records, by: \.selector) {
            for environment in [PushEnvironment.sandbox, .production] {
                var candidates = group.filter { $0.serves(environment) }
                if candidates.isEmpty, selector != nil { candidates = group }
                let newestFirst = candidates.sorted { $0.id > $1.id }
                if let chosen = newestFirst.first(where: { !$0.isFailing }) ?? newestFirst.first {
                    active.insert(chosen.id)
                }
            }
        }
        return active
    }

    static func object(_ credential: CredentialRecord, now: Date) -> [String: Any] {
        var object: [String: Any] = [
            "id": credential.id,
            "app_id": credential.appID,
            "kind": credential.kind.rawValue,
            "environment": credential.environmentName,
            "environments": credential.environments.map(\.rawValue),
            "team_id": orNull(credential.teamID),
            "key_id": orNull(credential.keyID),
            "subject": orNull(credential.subject),
            "topics": credential.topics,
            "expires_at": AdminTime.string(credential.expiresAt),
            "status": credential.status,
            "status_reason": orNull(credential.statusReason),
            "selector": orNull(credential.selector),
            "created_at": ISO8601.string(credential.createdAt),
        ]
        if let expires = credential.expiresAt {
            let seconds = expires.timeIntervalSince(now)
            object["days_left"] = Int((seconds / 86400).rounded(.down))
            object["expired"] = seconds <= 0
            object["expiring_soon"] = seconds > 0 && seconds < warningWindow
        } else {
            object["days_left"] = NSNull()
            object["expired"] = false
            object["expiring_soon"] = false
        }
        return object
    }
}
