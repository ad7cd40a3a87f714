import Foundation
import TuisongCore
import TuisongDelivery

/// The gateway's metric families (see `docs/api.md`, "Metrics"). One instance per runtime;
/// the parts of the gateway that count things hold it. Gauges over state kept elsewhere are
/// attached by the composition root with `addGauge` and read at scrape time.
public final class GatewayMetrics: Sendable {
    let registry = MetricsRegistry()

    /// Messages committed by `submit`, by the vendor API they came through.
    let messagesAccepted: CounterFamily
    /// Delivery attempts by outcome and the service's (or the gateway's) reason.
    let deliveries: CounterFamily
    /// Devices of an audience not sent to, by reason.
    let skips: CounterFamily
    /// From handing a push to a transport that declares a histogram of its own to its answer,
    /// by environment (`TransportDeclaration.responseHistogram`).
    let ownResponseSeconds: [PushChannel: HistogramFamily]
    /// From handing a push to any other transport to its service's answer.
    let channelResponseSeconds: HistogramFamily
    let httpRequests: CounterFamily
    let httpRequestSeconds: HistogramFamily
    /// Delivery receipts received, by channel and outcome.
    let receipts: CounterFamily
    /// Webhook attempts by event type and outcome (delivered, retry, failed, refused).
    let webhookEvents: CounterFamily

    /// Seconds, for answers that take milliseconds normally and up to the request timeout.
    static let latencyBuckets: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30,
    ]

    /// `ownResponseHistograms`: each transport's own response-time histogram, by its channel
    /// (`TransportDeclaration.responseHistogram`), registered in this order.
    public init(ownResponseHistograms: [(channel: PushChannel, name: String, help: String)] = []) {
        messagesAccepted = registry.counter(
            "tuisong_messages_accepted_total", "Push messages accepted (durably stored), by vendor API.",
            labels: ["vendor"])
        deliveries = registry.counter(
            "tuisong_deliveries_total",
            "Delivery attempts by push service (\(PushChannel.allCases.map(\.rawValue).joined(separator: ", "))), outcome (delivered, invalidated, retry, held, skipped, failed) and reason (the service's or the gateway's; empty when delivered).",
            labels: ["channel", "outcome", "reason"])
        skips = registry.counter(
            "tuisong_delivery_skips_total", "Audience devices not sent to, by reason.", labels: ["reason"])
        var own: [PushChannel: HistogramFamily] = [:]
        for histogram in ownResponseHistograms {
            own[histogram.channel] = registry.histogram(
                histogram.name, histogram.help, labels: ["environment"], buckets: Self.latencyBuckets)
        }
        ownResponseSeconds = own
        channelResponseSeconds = registry.histogram(
            "tuisong_channel_response_seconds",
            "Seconds from handing a push to an Android push service's transport to the service's answer (token fetch and queueing included).",
            labels: ["channel"], buckets: Self.latencyBuckets)
        httpRequests = registry.counter(
            "tuisong_http_requests_total", "HTTP requests answered, by route group and status.",
            labels: ["group", "status"])
        httpRequestSeconds = registry.histogram(
            "tuisong_http_request_seconds", "Seconds from routing an HTTP request to its answer, by route group.",
            labels: ["group"], buckets: Self.latencyBuckets)
        receipts = registry.counter(
            "tuisong_receipts_total",
            "Delivery receipts (the services' and apps') by channel and outcome: arrived, clicked, a reason the phone did not show it, repeated (already counted), unknown (no such message or send of the app), not_of_send (a verified param moved onto a token its request did not go to: ignored), refused (signature or tag did not verify).",
            labels: ["channel", "outcome"])
        webhookEvents = registry.counter(
            "tuisong_webhook_events_total",
            "Webhook attempts by event type and outcome (delivered: a 2xx; retry: to be tried again; failed: no more attempts; refused: the endpoint's address is not allowed).",
            labels: ["type", "outcome"])
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
    func record(_ outcomes: [SendOutcome], seconds: Double, channel: PushChannel, environment: PushEnvironment) {
        var counts: [LabelValues: UInt64] = [:]
        var delivered: UInt64 = 0
        var answered = 0
        for outcome in outcomes {
            switch outcome {
            case .delivered:
                delivered += 1  // the common case, counted without hashing labels
                answered += 1
            case .held, .skipped:
                // Usually decided before anything is sent (no usable credential): no answer time.
                counts[outcome.metricLabels(channel), default: 0] += 1
            default:
                counts[outcome.metricLabels(channel), default: 0] += 1
                answered += 1
            }
        }
        if delivered > 0 { counts[[channel.rawValue, "delivered", ""], default: 0] += delivered }
        deliveries.increment(counts)
        if let own = ownResponseSeconds[channel] {
            own.observe(seconds, times: answered, [environment.rawValue])
        } else {
            channelResponseSeconds.observe(seconds, times: answered, [channel.rawValue])
        }
    }
}

extension GatewayMetrics: DeliveryObserver {
    public func accepted(vendor: String) {
        messagesAccepted.increment([vendor])
    }

    public func skipped(_ reasons: [String: UInt64]) {
        skips.increment(Dictionary(uniqueKeysWithValues: reasons.map { ([$0.key], $0.value) }))
    }
}

extension SendOutcome {
    func metricLabels(_ channel: PushChannel) -> LabelValues {
        switch self {
        case .delivered: [channel.rawValue, "delivered", ""]
        case .invalidate(let reason, _): [channel.rawValue, "invalidated", reason.description]
        case .retry(let reason, _): [channel.rawValue, "retry", reason.description]
        case .held(let reason): [channel.rawValue, "held", reason.description]
        case .skipped(let reason): [channel.rawValue, "skipped", reason.description]
        case .failed(let reason): [channel.rawValue, "failed", reason.description]
        }
    }
}

/// Counts and times what the engine's transport does, for the engine and the retry worker
/// alike, without either knowing.
final class MeteredTransport: PushTransport {
    let wrapped: any PushTransport
    let metrics: GatewayMetrics

    init(_ wrapped: any PushTransport, metrics: GatewayMetrics) {
        self.wrapped = wrapped
        self.metrics = metrics
    }

    func send(_ batch: PushBatch, report: @escaping @Sendable ([SendReport]) -> Void) async {
        let started = ContinuousClock.now
        let metrics = self.metrics
        // Each push's route for the labels; one value when the batch has one route (the usual
        // case: the engine sends a page's group), so nothing is copied per push.
        let first = batch.pushes.first.map { Route(channel: $0.channel, environment: $0.environment) }
        let single =
            batch.pushes.contains { $0.channel != first?.channel || $0.environment != first?.environment }
            ? nil : first
        let routes = single == nil ? batch.pushes.map { Route(channel: $0.channel, environment: $0.environment) } : []
        await wrapped.send(batch) { reports in
            let seconds = Self.seconds(since: started)
            if let single {
                metrics.record(
                    reports.map(\.outcome), seconds: seconds, channel: single.channel, environment: single.environment)
            } else {
                for (route, reports) in Dictionary(grouping: reports, by: { routes[$0.index] }) {
                    metrics.record(
                        reports.map(\.outcome), seconds: seconds, channel: route.channel, environment: route.environment
                    )
                }
            }
            report(reports)
        }
    }

    private struct Route: Hashable {
        var channel: PushChannel
        var environment: PushEnvironment
    }

    func check(_ content: PushContent, options: PushOptions) throws {
        try wrapped.check(content, options: options)
    }

    func prepare(app: App, environment: PushEnvironment?) async {
        await wrapped.prepare(app: app, environment: environment)
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = ContinuousClock.now - start
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }
}
