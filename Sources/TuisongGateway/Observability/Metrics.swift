import Foundation
import Synchronization

/// A small Prometheus-style metrics registry: counters, gauges and histograms with labels, and
/// the text exposition format (version 0.0.4) that `GET /metrics` answers.
///
/// Each family keeps its series in one `Mutex`-guarded dictionary keyed by label values; hot
/// paths aggregate first (a batch of a service's answers is one lock per family) so the lock is taken
/// rarely. Gauges that mirror state held elsewhere (pool statistics, queue depths) are read at
/// scrape time through a closure instead of being kept up to date.
///
///     let registry = MetricsRegistry()
///     let requests = registry.counter("tuisong_http_requests_total", "HTTP requests.", labels: ["group", "status"])
///     requests.increment(["native", "200"])
///     print(await registry.exposition())
final class MetricsRegistry: Sendable {
    private let families = Mutex<[any MetricFamily]>([])

    func counter(_ name: String, _ help: String, labels: [String] = []) -> CounterFamily {
        register(CounterFamily(name: name, help: help, labelNames: labels))
    }

    func histogram(_ name: String, _ help: String, labels: [String] = [], buckets: [Double]) -> HistogramFamily {
        register(HistogramFamily(name: name, help: help, labelNames: labels, buckets: buckets))
    }

    /// A gauge whose samples are read when scraped (`read` returns label values → value).
    func gauge(
        _ name: String, _ help: String, labels: [String] = [],
        read: @escaping @Sendable () async -> [(labels: [String], value: Double)]
    ) {
        _ = register(GaugeFamily(name: name, help: help, labelNames: labels, read: read))
    }

    private func register<F: MetricFamily>(_ family: F) -> F {
        families.withLock { families in
            precondition(!families.contains { $0.name == family.name }, "metric \(family.name) registered twice")
            families.append(family)
        }
        return family
    }

    /// Every family in registration order, in the Prometheus text format.
    func exposition() async -> String {
        var out = ""
        for family in families.withLock({ $0 }) {
            out += "# HELP \(family.name) \(Exposition.escapeHelp(family.help))\n"
            out += "# TYPE \(family.name) \(family.type)\n"
            await family.write(to: &out)
        }
        return out
    }
}

protocol MetricFamily: Sendable {
    var name: String { get }
    var help: String { get }
    var type: String { get }
    func write(to out: inout String) async
}

/// Label values for one series; its count must match the family's label names.
typealias LabelValues = [String]

final class CounterFamily: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    var type: String { "counter" }
    private let values = Mutex<[LabelValues: UInt64]>([:])

    init(name: String, help: String, labelNames: [String]) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
    }

    func increment(_ labels: LabelValues = [], by amount: UInt64 = 1) {
        precondition(labels.count == labelNames.count, "\(name) takes \(labelNames.count) label values")
        values.withLock { $0[labels, default: 0] &+= amount }
    }

    /// Adds several series at once under one lock.
    func increment(_ amounts: [LabelValues: UInt64]) {
        guard !amounts.isEmpty else { return }
        values.withLock { values in
            for (labels, amount) in amounts { values[labels, default: 0] &+= amount }
        }
    }

    func value(_ labels: LabelValues = []) -> UInt64 {
        values.withLock { $0[labels] ?? 0 }
    }

    func write(to out: inout String) async {
        for (labels, value) in values.withLock({ $0 }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            out += "\(name)\(Exposition.labels(labelNames, labels)) \(value)\n"
        }
    }
}

final class HistogramFamily: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    /// Upper bounds, ascending; `+Inf` is implied.
    let buckets: [Double]
    var type: String { "histogram" }

    struct Series {
        /// Observations per bucket (not cumulative); the last slot is above every bound.
        var counts: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }
    private let series = Mutex<[LabelValues: Series]>([:])

    init(name: String, help: String, labelNames: [String], buckets: [Double]) {
        precondition(zip(buckets, buckets.dropFirst()).allSatisfy { $0 < $1 }, "\(name): buckets must ascend")
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.buckets = buckets
    }

    func observe(_ value: Double, _ labels: LabelValues = []) {
        observe([value], labels)
    }

    /// Records many observations of one series under one lock.
    func observe(_ values: [Double], _ labels: LabelValues = []) {
        precondition(labels.count == labelNames.count, "\(name) takes \(labelNames.count) label values")
        guard !values.isEmpty else { return }
        let slots = values.map { value in buckets.firstIndex { value <= $0 } ?? buckets.count }
        series.withLock { series in
            var entry = series[labels] ?? Series(counts: Array(repeating: 0, count: buckets.count + 1))
            for (slot, value) in zip(slots, values) {
                entry.counts[slot] += 1
                entry.sum += value
            }
            entry.count += UInt64(values.count)
            series[labels] = entry
        }
    }

    /// Records `value` observed `times` times (a batch answered at once) under one lock.
    func observe(_ value: Double, times: Int, _ labels: LabelValues = []) {
        precondition(labels.count == labelNames.count, "\(name) takes \(labelNames.count) label values")
        guard times > 0 else { return }
        let slot = buckets.firstIndex { value <= $0 } ?? buckets.count
        series.withLock { series in
            var entry = series[labels] ?? Series(counts: Array(repeating: 0, count: buckets.count + 1))
            entry.counts[slot] += UInt64(times)
            entry.sum += value * Double(times)
            entry.count += UInt64(times)
            series[labels] = entry
        }
    }

    func count(_ labels: LabelValues = []) -> UInt64 {
        series.withLock { $0[labels]?.count ?? 0 }
    }

    func write(to out: inout String) async {
        for (labels, entry) in series.withLock({ $0 }).sorted(by: { $0.key.lexicographicallyPrecedes($1.key) }) {
            var cumulative: UInt64 = 0
            for (index, bound) in buckets.enumerated() {
                cumulative += entry.counts[index]
                let le = Exposition.labels(labelNames + ["le"], labels + [Exposition.number(bound)])
                out += "\(name)_bucket\(le) \(cumulative)\n"
            }
            let inf = Exposition.labels(labelNames + ["le"], labels + ["+Inf"])
            out += "\(name)_bucket\(inf) \(entry.count)\n"
            let plain = Exposition.labels(labelNames, labels)
            out += "\(name)_sum\(plain) \(Exposition.number(entry.sum))\n"
            out += "\(name)_count\(plain) \(entry.count)\n"
        }
    }
}

final class GaugeFamily: MetricFamily {
    let name: String
    let help: String
    let labelNames: [String]
    let read: @Sendable () async -> [(labels: [String], value: Double)]
    var type: String { "gauge" }

    init(
        name: String, help: String, labelNames: [String],
        read: @escaping @Sendable () async -> [(labels: [String], value: Double)]
    ) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.read = read
    }

    func write(to out: inout String) async {
        for sample in await read() where sample.labels.count == labelNames.count {
            out += "\(name)\(Exposition.labels(labelNames, sample.labels)) \(Exposition.number(sample.value))\n"
        }
    }
}

/// The Prometheus text format's escaping and number rules.
enum Exposition {
    static let contentType = "text/plain; version=0.0.4; charset=utf-8"

    /// `{a="x",b="y"}`, or nothing without labels. Values escape `\`, `"` and line feeds.
    static func labels(_ names: [String], _ values: [String]) -> String {
        guard !names.isEmpty else { return "" }
        var text = "{"
        for (index, (name, value)) in zip(names, values).enumerated() {
            if index > 0 { text += "," }
            text += name + "=\"" + escapeLabelValue(value) + "\""
        }
        return text + "}"
    }

    static func escapeLabelValue(_ value: String) -> String {
        guard value.contains(where: { $0 == "\\" || $0 == "\"" || $0 == "\n" }) else { return value }
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    /// HELP text escapes `\` and line feeds (not quotes).
    static func escapeHelp(_ help: String) -> String {
        help.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\n", with: "\\n")
    }

    /// Whole numbers without a fraction, `+Inf`/`-Inf`/`NaN` as Prometheus spells them.
    static func number(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded(), abs(value) < 1e15 { return String(Int64(value)) }
        return "\(value)"
    }
}
