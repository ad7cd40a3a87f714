import Foundation
import TuisongCore
import TuisongCrypto
import TuisongDelivery
import TuisongHTTP
import TuisongHTTPClient
import TuisongStore
import TuisongTransportKit

/// `GET /metrics`: the registry in the Prometheus text format, behind an optional bearer
/// token, plus the gauges read from the pools and the store when scraped.
enum MetricsEndpoint {
    static func handler(metrics: GatewayMetrics, bearerToken: String) -> Handler {
        let expected = Array("Bearer \(bearerToken)".utf8)
        return { request in
            if !bearerToken.isEmpty {
                let given = Array((request.headers["Authorization"] ?? "").utf8)
                guard constantTimeEquals(given, expected) else {
                    var refused = Response.json(
                        ["error": ["code": "unauthorized", "message": "a metrics bearer token is required"]],
                        status: 401)
                    refused.headers.add(name: "WWW-Authenticate", value: #"Bearer realm="metrics""#)
                    return refused
                }
            }
            let text = await metrics.exposition()
            return Response(
                status: 200, headers: ["Content-Type": Exposition.contentType], body: Array(text.utf8))
        }
    }

    /// Compares without an early exit, so the time taken says nothing about the token.
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for index in 0..<max(a.count, b.count) {
            difference |= (index < a.count ? a[index] : 0) ^ (index < b.count ? b[index] : 0)
        }
        return difference == 0
    }

    /// Each Android service's HTTP client (connections, requests in flight) and access-token
    /// fetches, labelled by channel.
    static func addAndroidGauges(to metrics: GatewayMetrics, android: GatewayTransports) {
        func perChannel(_ value: @escaping @Sendable (HTTPClientStatistics, Int, Int) -> Int)
            -> @Sendable () async -> [(labels: [String], value: Double)]
        {
            {
                android.statistics.map {
                    ([$0.channel.rawValue], Double(value($0.http, $0.tokenFetches, $0.tokenFailures)))
                }
            }
        }
        metrics.addGauge(
            "tuisong_channel_connections", "Open connections per Android push service.", labels: ["channel"],
            read: perChannel { http, _, _ in http.openConnections })
        metrics.addGauge(
            "tuisong_channel_requests_in_flight", "Requests sent and not yet answered per Android push service.",
            labels: ["channel"], read: perChannel { http, _, _ in http.inFlight })
        metrics.addGauge(
            "tuisong_channel_token_refreshes", "Access tokens fetched from each Android service (refreshes included).",
            labels: ["channel"], read: perChannel { _, fetches, _ in fetches })
        metrics.addGauge(
            "tuisong_channel_token_failures", "Access-token requests each Android service refused or failed.",
            labels: ["channel"], read: perChannel { _, _, failures in failures })
    }

    static func addGauges(to metrics: GatewayMetrics, transports: GatewayTransports, store: any GatewayStore) {
        addAndroidGauges(to: metrics, android: transports)
        // The transports' own (connection pools' gauges), as each declares them.
        for gauge in transports.gauges {
            metrics.addGauge(gauge.name, gauge.help, labels: gauge.labels, read: gauge.read)
        }
        metrics.addGauge(
            "tuisong_sqlite_memory_bytes",
            "Bytes SQLite holds in this process: every connection's page cache, schema and statements (0 on PostgreSQL)."
        ) { [([], Double(SQLiteStore.memoryInUse))] }
        // One query serves both gauges of a scrape: the first reads, the second takes its answer.
        let backlog = BacklogReading(store: store)
        metrics.addGauge("tuisong_retry_queue_depth", "Deliveries waiting for a retry.") {
            guard let counts = await backlog.read() else { return [] }
            return [([], Double(counts.retryQueued))]
        }
        metrics.addGauge(
            "tuisong_held_deliveries",
            "Deliveries held until their app has a working credential for their service (\(PushChannel.list(PushChannel.allCases, \.displayName, "or")))."
        ) {
            guard let counts = await backlog.last() else { return [] }
            return [([], Double(counts.held))]
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The store's delivery backlog, read once per scrape.
actor BacklogReading {
    let store: any GatewayStore
    private var latest: (retryQueued: Int, held: Int)?

    init(store: any GatewayStore) {
        self.store = store
    }

    /// Reads the counts now; nil when the database does not answer (the gauge is left out).
    func read() async -> (retryQueued: Int, held: Int)? {
        latest = try? await store.deliveryBacklog()
        return latest
    }

    func last() -> (retryQueued: Int, held: Int)? { latest }
}
