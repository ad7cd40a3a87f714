import Foundation
import Testing
import TuisongLookAlikes
import TuisongPluginTestKit

@testable import TuisongGateway

/// `GET /metrics` scraped from a running gateway and parsed as the Prometheus text format.
@Suite(.serialized) struct MetricsTests {
    @Test func aPushMovesTheCountersAndTheExpositionStaysWellFormed() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp(bundleID: "com.example.metrics")

        let before = try await scrape("\(gw.baseURL)/metrics")
        for family in [
            "tuisong_messages_accepted_total", "tuisong_deliveries_total", "tuisong_delivery_skips_total",
            "tuisong_apns_response_seconds", "tuisong_http_requests_total", "tuisong_http_request_seconds",
            "tuisong_store_write_seconds", "tuisong_apns_connections", "tuisong_apns_streams",
            "tuisong_retry_queue_depth", "tuisong_held_deliveries", "tuisong_sqlite_memory_bytes",
        ] {
            #expect(before.types[family] != nil, "\(family) is not declared")
        }
        #expect(before.types["tuisong_apns_response_seconds"] == "histogram")
        #expect(before.types["tuisong_deliveries_total"] == "counter")
        #expect(before.types["tuisong_held_deliveries"] == "gauge")
        #expect(before.value("tuisong_messages_accepted_total", ["vendor": "native"]) == nil)
        #expect(before.value("tuisong_retry_queue_depth") == 0)
        // The gateway's own SQLite file is open: its connections hold schema and pages.
        #expect((before.value("tuisong_sqlite_memory_bytes") ?? 0) > 0)

        let mock = try #require(gw.runtime.localMock)
        // Every answer takes 300 ms, and all are held until a scrape has seen streams in flight:
        // the latency alone raced the scrapes, which on a loaded machine could all fall before
        // or after the 300 ms (1 run in ~10 at load 15-20).
        var faults = LookAlikeConfiguration.Faults.magicTokenPrefixes
        faults.latencyMilliseconds = 300
        faults.holdAnswers = true
        mock.setFaults(faults)
        let alive = (1...20).map { token($0, prefix: "ab") }
        let dead = token(1, prefix: "410")
        var deadID = 0
        for device in alive + [dead] {
            let r = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: ["environment": "production"])
            #expect(r.status == 201)
            if device == dead { deadID = try #require(r.jsonObject["id"] as? Int) }
        }
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["all": true], "notification": ["alert": "指标"]])
        #expect(push.status == 202)
        let id = try #require(push.jsonObject["message_id"] as? Int)

        // Scrape while the push is under way: the held answers keep its streams open until seen.
        try await waitUntil("a scrape sees APNs streams in flight", within: .seconds(60), every: .milliseconds(20)) {
            try await scrape("\(gw.baseURL)/metrics").samples(named: "tuisong_apns_streams").contains { $0.value > 0 }
        }
        faults.holdAnswers = false
        mock.setFaults(faults)
        try await waitUntil("message \(id) completed", within: .seconds(60), every: .milliseconds(20)) {
            let status = try await http("GET", "\(gw.baseURL)/api/v1/messages/\(id)", key: key).jsonObject
            return status["state"] as? String == "completed"
        }

        let after = try await scrape("\(gw.baseURL)/metrics")
        #expect(after.value("tuisong_messages_accepted_total", ["vendor": "native"]) == 1)
        #expect(
            after.value("tuisong_deliveries_total", ["channel": "apns", "outcome": "delivered", "reason": ""]) == 20)
        #expect(
            after.value(
                "tuisong_deliveries_total", ["channel": "apns", "outcome": "invalidated", "reason": "Unregistered"])
                == 1)
        #expect(after.value("tuisong_apns_response_seconds_count", ["environment": "production"]) == 21)
        // Every answer took the mock's 300 ms at least.
        #expect(after.value("tuisong_apns_response_seconds_bucket", ["environment": "production", "le": "0.25"]) == 0)
        #expect((after.value("tuisong_apns_response_seconds_sum", ["environment": "production"]) ?? 0) >= 21 * 0.3)
        #expect(after.value("tuisong_http_requests_total", ["group": "native", "status": "201"]) == 21)
        #expect(after.value("tuisong_http_requests_total", ["group": "native", "status": "202"]) == 1)
        #expect((after.value("tuisong_http_requests_total", ["group": "metrics", "status": "200"]) ?? 0) >= 2)
        #expect((after.value("tuisong_store_write_seconds_count") ?? 0) > 0)
        let connections = after.samples(named: "tuisong_apns_connections")
        #expect(connections.count == 1)
        #expect((connections.first?.value ?? 0) >= 1)
        #expect(connections.first?.labels["environment"] == "production")

        // A second push to the dead device only: it is skipped, and the skip is counted.
        let again = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["devices": [deadID]], "notification": ["alert": "again"]])
        #expect(again.status == 202)
        let secondID = try #require(again.jsonObject["message_id"] as? Int)
        try await waitUntil(every: .milliseconds(50)) {
            try await http("GET", "\(gw.baseURL)/api/v1/messages/\(secondID)", key: key).jsonObject["state"] as? String
                == "completed"
        }
        let skipped = try await scrape("\(gw.baseURL)/metrics")
        #expect(skipped.value("tuisong_delivery_skips_total", ["reason": "DeviceInvalidated"]) == 1)
        #expect(skipped.samples(named: "tuisong_delivery_skips_total").count == 1)
        #expect(skipped.value("tuisong_messages_accepted_total", ["vendor": "native"]) == 2)
    }

    @Test func aThrottledDeviceShowsInTheRetryQueueGauge() async throws {
        // A long first retry delay keeps the delivery waiting while we look.
        let gw = try await TestGateway.start(environment: ["TUISONG_DELIVERY_RETRY_BASE_SECONDS": "600"])
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        gw.runtime.localMock?.setFaults(LookAlikeConfiguration.Faults.magicTokenPrefixes)
        let throttled = token(1, prefix: "429")
        let r = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(throttled)", key: key, json: ["environment": "production"])
        #expect(r.status == 201)
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [throttled]], "notification": ["alert": "later"]])
        #expect(push.status == 202)
        var last: Exposition.Parsed?
        try await waitUntil(every: .milliseconds(50)) {
            last = try await scrape("\(gw.baseURL)/metrics")
            // The gauge and the counter are two updates; a scrape may fall between them.
            return last?.value("tuisong_retry_queue_depth") == 1
                && last?.value(
                    "tuisong_deliveries_total", ["channel": "apns", "outcome": "retry", "reason": "TooManyRequests"])
                    == 1
        }
        #expect(
            last?.value(
                "tuisong_deliveries_total", ["channel": "apns", "outcome": "retry", "reason": "TooManyRequests"]) == 1)
        #expect(last?.value("tuisong_held_deliveries") == 0)
    }

    @Test func anAppWithoutACredentialShowsHeldDeliveries() async throws {
        // Not local mode and no credential: nothing is sent anywhere, the delivery is held.
        let gw = try await TestGateway.start(environment: ["TUISONG_APNS_LOCAL_MOCK": "false"])
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let device = token(1)
        let r = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(device)", key: key, json: ["environment": "production"])
        #expect(r.status == 201)
        let push = try await http(
            "POST", "\(gw.baseURL)/api/v1/push", key: key,
            json: ["audience": ["tokens": [device]], "notification": ["alert": "kept"]])
        #expect(push.status == 202)
        var last: Exposition.Parsed?
        try await waitUntil(every: .milliseconds(50)) {
            last = try await scrape("\(gw.baseURL)/metrics")
            // The gauge and the counter are two updates; a scrape may fall between them.
            return last?.value("tuisong_held_deliveries") == 1
                && last?.value(
                    "tuisong_deliveries_total", ["channel": "apns", "outcome": "held", "reason": "no_credential"]) == 1
        }
        #expect(
            last?.value("tuisong_deliveries_total", ["channel": "apns", "outcome": "held", "reason": "no_credential"])
                == 1)
        // Held before anything was sent: no APNs answer time, no pool.
        #expect(last?.value("tuisong_apns_response_seconds_count", ["environment": "production"]) == nil)
        #expect(last?.samples(named: "tuisong_apns_connections").isEmpty == true)
    }

    @Test func aSeparateListenerWithABearerTokenRefusesScrapesWithoutIt() async throws {
        let gw = try await TestGateway.start(environment: [
            "TUISONG_METRICS_LISTEN": "127.0.0.1:0", "TUISONG_METRICS_BEARER_TOKEN": "s3cret-scrape",
        ])
        defer { Task { await gw.stop() } }
        let port = try #require(gw.runtime.metricsPort)
        #expect(port != gw.runtime.port)
        let url = "http://127.0.0.1:\(port)/metrics"

        let anonymous = try await http("GET", url)
        #expect(anonymous.status == 401)
        #expect(anonymous.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
        #expect(anonymous.errorCode == "unauthorized")
        #expect(try await http("GET", url, key: "wrong").status == 401)
        #expect(try await http("GET", url, key: "s3cret-scrape-and-more").status == 401)

        let scraped = try await scrape(url, token: "s3cret-scrape")
        #expect(scraped.types["tuisong_deliveries_total"] == "counter")
        #expect(scraped.value("tuisong_http_requests_total", ["group": "metrics", "status": "401"]) == 3)

        // Not on the main listener: there GET /metrics is an ordinary unknown path.
        let main = try await http("GET", "\(gw.baseURL)/metrics", key: "s3cret-scrape")
        #expect(main.status == 404)
    }

    @Test func metricsCanBeTurnedOff() async throws {
        let gw = try await TestGateway.start(environment: ["TUISONG_METRICS_ENABLED": "false"])
        defer { Task { await gw.stop() } }
        #expect(gw.runtime.metricsPort == nil)
        #expect(try await http("GET", "\(gw.baseURL)/metrics").status == 404)
    }

    @Test func theWriterEscapesAndTheParserReadsBack() async throws {
        let registry = MetricsRegistry()
        let counter = registry.counter("t_total", "Help with \\ and\na line feed.", labels: ["reason"])
        counter.increment(["quote \" backslash \\ line\nfeed 推送"], by: 3)
        counter.increment(["plain"])
        let histogram = registry.histogram("t_seconds", "Latency.", labels: ["env"], buckets: [0.1, 1])
        histogram.observe(0.05, ["a"])
        histogram.observe(0.5, times: 2, ["a"])
        histogram.observe(7, ["a"])
        registry.gauge("t_depth", "A gauge.") { [([], 2.5)] }
        let text = await registry.exposition()
        #expect(text.contains("# HELP t_total Help with \\\\ and\\na line feed.\n"))
        let parsed = try Exposition.Parsed(text)
        #expect(parsed.value("t_total", ["reason": "quote \" backslash \\ line\nfeed 推送"]) == 3)
        #expect(parsed.value("t_total", ["reason": "plain"]) == 1)
        #expect(parsed.value("t_seconds_bucket", ["env": "a", "le": "0.1"]) == 1)
        #expect(parsed.value("t_seconds_bucket", ["env": "a", "le": "1"]) == 3)
        #expect(parsed.value("t_seconds_bucket", ["env": "a", "le": "+Inf"]) == 4)
        #expect(parsed.value("t_seconds_count", ["env": "a"]) == 4)
        #expect(parsed.value("t_seconds_sum", ["env": "a"]) == 8.05)
        #expect(parsed.value("t_depth") == 2.5)
        #expect(parsed.types == ["t_total": "counter", "t_seconds": "histogram", "t_depth": "gauge"])
    }

    @Test func theParserRefusesMalformedExpositions() {
        let good = """
            # HELP a_total A counter.
            # TYPE a_total counter
            a_total{x="a\\"b\\\\c\\nd"} 3
            # HELP h A histogram.
            # TYPE h histogram
            h_bucket{le="0.5"} 1
            h_bucket{le="+Inf"} 2
            h_sum 1.5
            h_count 2

            """
        #expect(throws: Never.self) { try Exposition.Parsed(good) }
        #expect((try? Exposition.Parsed(good))?.value("a_total", ["x": "a\"b\\c\nd"]) == 3)
        for bad in [
            "a_total 1\n",  // no TYPE before the sample
            "# TYPE a_total counter\na_total{x=\"unterminated} 1\n",
            "# TYPE a_total counter\na_total{x=\"v\"} one\n",
            "# TYPE a_total counter\na_total{x=\"bad\\q\"} 1\n",  // unknown escape
            "# TYPE a_total counter\n1a_total 1\n",
            // Buckets not cumulative:
            "# TYPE h histogram\nh_bucket{le=\"1\"} 2\nh_bucket{le=\"+Inf\"} 1\nh_sum 1\nh_count 1\n",
            "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_sum 1\nh_count 1\n",  // no +Inf bucket
            "# TYPE a_total counter\n# TYPE a_total counter\na_total 1\n",
            "# TYPE a_total counter\na_total 1",  // no final line feed
        ] {
            #expect(throws: ExpositionError.self, "accepted: \(bad)") { try Exposition.Parsed(bad) }
        }
    }

    // MARK: Helpers

    func scrape(_ url: String, token: String? = nil) async throws -> Exposition.Parsed {
        let r = try await http("GET", url, key: token)
        #expect(r.status == 200)
        #expect(r.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8")
        return try Exposition.Parsed(String(decoding: r.body, as: UTF8.self))
    }

}

struct ExpositionError: Error, CustomStringConvertible {
    var line: Int
    var message: String
    var description: String { "line \(line): \(message)" }
}

extension Exposition {
    /// A strict parser of the text format, written from its specification rather than from the
    /// writer: every line must be a HELP, a TYPE or a sample of a family declared before it.
    struct Parsed {
        struct Sample {
            var name: String
            var labels: [String: String]
            var value: Double
        }

        var types: [String: String] = [:]
        var helps: [String: String] = [:]
        var samples: [Sample] = []

        init(_ text: String) throws {
            guard text.isEmpty || text.hasSuffix("\n") else { throw ExpositionError(line: 0, message: "no final LF") }
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            for (index, raw) in lines.enumerated() {
                let line = String(raw)
                let number = index + 1
                func fail(_ message: String) -> ExpositionError { ExpositionError(line: number, message: message) }
                if line.isEmpty { continue }
                if line.hasPrefix("# HELP ") || line.hasPrefix("# TYPE ") {
                    let rest = line.dropFirst(7)
                    let name = String(rest.prefix { $0 != " " })
                    guard Self.isMetricName(name) else { throw fail("bad metric name \(name)") }
                    let value = String(rest.dropFirst(name.count + 1))
                    if line.hasPrefix("# HELP ") {
                        guard helps[name] == nil else { throw fail("second HELP for \(name)") }
                        helps[name] = value
                    } else {
                        guard ["counter", "gauge", "histogram", "summary", "untyped"].contains(value) else {
                            throw fail("bad type \(value)")
                        }
                        guard types[name] == nil else { throw fail("second TYPE for \(name)") }
                        guard !samples.contains(where: { Self.family(of: $0.name, in: [name: value]) != nil }) else {
                            throw fail("TYPE after samples of \(name)")
                        }
                        types[name] = value
                    }
                    continue
                }
                guard !line.hasPrefix("#") else { throw fail("unexpected comment") }
                let sample = try Self.parseSample(line, fail: fail)
                guard let family = Self.family(of: sample.name, in: types) else {
                    throw fail("sample \(sample.name) of no declared family")
                }
                if types[family] == "histogram", sample.name == family + "_bucket" {
                    guard let le = sample.labels["le"], le == "+Inf" || Double(le) != nil else {
                        throw fail("bucket without a numeric le")
                    }
                }
                samples.append(sample)
            }
            try checkHistograms()
        }

        /// The family a sample name belongs to: itself, or a histogram's `_bucket/_sum/_count`.
        static func family(of name: String, in types: [String: String]) -> String? {
            if types[name] != nil { return name }
            for suffix in ["_bucket", "_sum", "_count"] where name.hasSuffix(suffix) {
                let base = String(name.dropLast(suffix.count))
                if types[base] == "histogram" || types[base] == "summary" { return base }
            }
            return nil
        }

        static func isMetricName(_ name: String) -> Bool {
            guard let first = name.unicodeScalars.first, first == "_" || first == ":" || first.isASCIILetter else {
                return false
            }
            return name.unicodeScalars.allSatisfy { $0 == "_" || $0 == ":" || $0.isASCIILetter || $0.isASCIIDigit }
        }

        static func isLabelName(_ name: String) -> Bool {
            guard let first = name.unicodeScalars.first, first == "_" || first.isASCIILetter else { return false }
            return name.unicodeScalars.allSatisfy { $0 == "_" || $0.isASCIILetter || $0.isASCIIDigit }
        }

        static func parseSample(_ line: String, fail: (String) -> ExpositionError) throws -> Sample {
            var chars = Substring(line)
            let name = String(chars.prefix { $0 != "{" && $0 != " " })
            guard isMetricName(name) else { throw fail("bad metric name \(name)") }
            chars = chars.dropFirst(name.count)
            var labels: [String: String] = [:]
            if chars.first == "{" {
                chars = chars.dropFirst()
                while chars.first != "}" {
                    let labelName = String(chars.prefix { $0 != "=" })
                    guard isLabelName(labelName) else { throw fail("bad label name \(labelName)") }
                    chars = chars.dropFirst(labelName.count)
                    guard chars.hasPrefix("=\"") else { throw fail("expected =\" after \(labelName)") }
                    chars = chars.dropFirst(2)
                    var value = ""
                    var closed = false
                    while let c = chars.first {
                        chars = chars.dropFirst()
                        if c == "\"" {
                            closed = true
                            break
                        }
                        if c == "\\" {
                            guard let escaped = chars.first else { throw fail("dangling escape") }
                            chars = chars.dropFirst()
                            switch escaped {
                            case "\\": value.append("\\")
                            case "\"": value.append("\"")
                            case "n": value.append("\n")
                            default: throw fail("unknown escape \\\(escaped)")
                            }
                        } else {
                            value.append(c)
                        }
                    }
                    guard closed else { throw fail("unterminated label value") }
                    guard labels[labelName] == nil else { throw fail("label \(labelName) twice") }
                    labels[labelName] = value
                    if chars.first == "," {
                        chars = chars.dropFirst()
                    } else if chars.first != "}" {
                        throw fail("expected , or }")
                    }
                }
                chars = chars.dropFirst()
            }
            guard chars.first == " " else { throw fail("expected a space before the value") }
            let fields = chars.dropFirst().split(separator: " ", omittingEmptySubsequences: false)
            guard fields.count == 1 || (fields.count == 2 && Int64(fields[1]) != nil) else {
                throw fail("expected a value and an optional timestamp")
            }
            let text = String(fields[0])
            let value: Double
            switch text {
            case "+Inf": value = .infinity
            case "-Inf": value = -.infinity
            case "NaN": value = .nan
            default:
                guard let parsed = Double(text), text.allSatisfy({ "0123456789.eE+-".contains($0) }) else {
                    throw fail("bad value \(text)")
                }
                value = parsed
            }
            return Sample(name: name, labels: labels, value: value)
        }

        /// Buckets cumulative, a `+Inf` bucket equal to `_count`, for every histogram series.
        func checkHistograms() throws {
            for (family, type) in types where type == "histogram" {
                var series: [[String: String]: [(le: Double, count: Double)]] = [:]
                for sample in samples where sample.name == family + "_bucket" {
                    var key = sample.labels
                    let le = key.removeValue(forKey: "le")!
                    series[key, default: []].append((le == "+Inf" ? .infinity : Double(le)!, sample.value))
                }
                for (key, buckets) in series {
                    let sorted = buckets.sorted { $0.le < $1.le }
                    guard zip(sorted, sorted.dropFirst()).allSatisfy({ $0.count <= $1.count }) else {
                        throw ExpositionError(line: 0, message: "\(family) buckets are not cumulative")
                    }
                    guard sorted.last?.le == .infinity else {
                        throw ExpositionError(line: 0, message: "\(family) has no +Inf bucket")
                    }
                    let count = samples.first { $0.name == family + "_count" && $0.labels == key }?.value
                    guard count == sorted.last?.count else {
                        throw ExpositionError(line: 0, message: "\(family) +Inf bucket differs from _count")
                    }
                    guard samples.contains(where: { $0.name == family + "_sum" && $0.labels == key }) else {
                        throw ExpositionError(line: 0, message: "\(family) has no _sum")
                    }
                }
            }
        }

        func samples(named name: String) -> [Sample] {
            samples.filter { $0.name == name }
        }

        func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
            samples.first { $0.name == name && $0.labels == labels }?.value
        }
    }
}

extension Unicode.Scalar {
    fileprivate var isASCIILetter: Bool { ("a"..."z").contains(self) || ("A"..."Z").contains(self) }
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
