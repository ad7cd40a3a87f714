import Foundation
import TuisongCore

/// The gateway's metric families (see `docs/api.md`, "Metrics"). One instance per runtime;
/// the parts of the gateway that count things hold it. Gauges over state kept elsewhere are
/// attached by the composition root with `addGauge` and read at scrape time.
public final class GatewayMetrics: Sendable {
    let registry = MetricsRegistry()

    /// Messages committed by `submit`, by the vendor API they came through.
    let messagesAccepted: CounterFamily
    /// Delivery attempts by outcome and APNs (or gateway) reason.
    let deliveries: CounterFamily
    /// Devices of an audience not sent to, by reason.
    let skips: CounterFamily
    /// From handing a push to the APNs pool to its answer.
    let apnsResponseSeconds: HistogramFamily
    let httpRequests: CounterFamily
    let httpRequestSeconds: HistogramFamily

    /// Seconds, for answers that take milliseconds normally and up to the request timeout.
    static let latencyBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    ]

    public init() {
        messagesAccepted = registry.counter(
            "tuisong_messages_accepted_total", "Push messages accepted (durably stored), by vendor API.",
            labels: ["vendor"])
        deliveries = registry.counter(
            "tuisong_deliveries_total",
            "Delivery attempts by outcome (delivered, invalidated, retry, held, failed) and reason (APNs reason or the gateway's; empty when delivered).",
            labels: ["outcome", "reason"])
        skips = registry.counter(
            "tuisong_delivery_skips_total", "Audience devices not sent to, by reason.", labels: ["reason"])
        apnsResponseSeconds = registry.histogram(
            "tuisong_apns_response_seconds",
            "Seconds from handing a push to the APNs connection pool to APNs's answer (includes waiting for a free stream).",
            labels: ["environment"], buckets: Self.latencyBuckets)
        httpRequests = registry.counter(
            "tuisong_http_requests_total", "HTTP requests answered, by route group and status.",
            labels: ["group", "status"])
        httpRequestSeconds = registry.histogram(
            "tuisong_http_request_seconds", "Seconds from routing an HTTP request to its answer, by route group.",
            labels: ["group"], buckets: Self.latencyBuckets)
    }

    /// A gauge read at scrape time.
    func addGauge(
        _ name: String, _ help: String, labels: [String] = [],
        read: @escaping @Sendable () async -> [(labels: [String], value: Double)]
    ) {
        registry.gauge(name, help, labels: labels, read: read)
    }

    /// A histogram added by the composition root (e.g. store transaction time).
    func addHistogram(_ name: String, _ help: String, labels: [String] = [], buckets: [Double]) -> HistogramFamily {
        registry.histogram(name, help, labels: labels, buckets: buckets)
    }

    func exposition() async -> String {
        await registry.exposition()
    }

    /// Counts one batch of outcomes under one lock per family.
    func record(_ outcomes: [SendOutcome], seconds: Double, environment: APNsEnvironment) {
        var counts: [LabelValues: UInt64] = [:]
        var delivered: UInt64 = 0
        var answered = 0
        for outcome in outcomes {
            switch outcome {
            case .delivered:
                delivered += 1  // the common case, counted without hashing labels
                answered += 1
            case .held:
                // Usually decided before anything is sent (no usable credential): no answer time.
                counts[outcome.metricLabels, default: 0] += 1
            default:
                counts[outcome.metricLabels, default: 0] += 1
                answered += 1
            }
        }
        if delivered > 0 { counts[SendOutcome.deliveredLabels, default: 0] += delivered }
        deliveries.increment(counts)
        apnsResponseSeconds.observe(seconds, times: answered, [environment.rawValue])
    }
}

extension SendOutcome {
    static let deliveredLabels: LabelValues = ["delivered", ""]

    var metricLabels: LabelValues {
        switch self {
        case .delivered: ["delivered", ""]
        case .invalidate(let reason, _): ["invalidated", reason]
        case .retry(let reason, _): ["retry", reason]
        case .held(let reason): ["held", reason]
        case .failed(let reason): ["failed", reason]
        }
    }
}

/// Counts and times what the engine's sender does, for the engine and the retry worker
/// alike, without either knowing.
final class MeteredPushSender: PushSender {
    let wrapped: any PushSender
    let metrics: GatewayMetrics

    init(_ wrapped: any PushSender, metrics: GatewayMetrics) {
        self.wrapped = wrapped
        self.metrics = metrics
    }

    func send(app: App, message: MessageRecord, token: String, environment: APNsEnvironment) async -> SendOutcome {
        let started = ContinuousClock.now
        let outcome = await wrapped.send(app: app, message: message, token: token, environment: environment)
        metrics.record([outcome], seconds: Self.seconds(since: started), environment: environment)
        return outcome
    }

    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, tokens: [String],
        report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        let started = ContinuousClock.now
        let metrics = self.metrics
        await wrapped.send(app: app, message: message, environment: environment, tokens: tokens) { reports in
            metrics.record(reports.map(\.outcome), seconds: Self.seconds(since: started), environment: environment)
            report(reports)
        }
    }

    func prepare(app: App, environment: APNsEnvironment?) async {
        await wrapped.prepare(app: app, environment: environment)
    }

    // The selector-aware forms must be forwarded too: the protocol's defaults would drop the
    // selector and send every device through the app's default credential.
    func send(
        app: App, message: MessageRecord, token: String, environment: APNsEnvironment, selector: String?,
        payload: [UInt8]?
    ) async -> SendOutcome {
        let started = ContinuousClock.now
        let outcome = await wrapped.send(
            app: app, message: message, token: token, environment: environment, selector: selector, payload: payload)
        metrics.record([outcome], seconds: Self.seconds(since: started), environment: environment)
        return outcome
    }

    func send(
        app: App, message: MessageRecord, environment: APNsEnvironment, selector: String?, tokens: [String],
        payloads: [[UInt8]?]?, report: @escaping @Sendable ([SendReport]) -> Void
    ) async {
        let started = ContinuousClock.now
        let metrics = self.metrics
        await wrapped.send(
            app: app, message: message, environment: environment, selector: selector, tokens: tokens, payloads: payloads
        ) { reports in
            metrics.record(reports.map(\.outcome), seconds: Self.seconds(since: started), environment: environment)
            report(reports)
        }
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
