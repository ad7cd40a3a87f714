import Foundation
import Logging
import TuisongHTTP

/// The HTTP request a task is answering, bound around its handler so that every log line it
/// writes carries the request id (`JSONLogHandler` adds it as `request_id`).
public enum RequestContext {
    @TaskLocal public static var requestID: String?

    /// `request_id` for every log line written while a request is answered, in any handler
    /// that takes a metadata provider (swift-log's way to carry task-local context).
    public static let metadataProvider = Logger.MetadataProvider {
        guard let id = requestID else { return [:] }
        return ["request_id": .string(id)]
    }
}

/// Request ids: a client's own `X-Request-Id` when it is sane, else 128 random bits as 32
/// lowercase hex digits. Ids end up in URLs, logs and support tickets, so one must say nothing
/// about another (a per-process prefix and a counter told how many requests came between two).
enum RequestIDs {
    /// 32 hex digits of 128 random bits, written in place: `String(radix:)`, its padding and
    /// the concatenation were over half of this (0.8 % of a chat message's CPU).
    static func next() -> String {
        var generator = SystemRandomNumberGenerator()
        let words = (generator.next() as UInt64, generator.next() as UInt64)
        return String(unsafeUninitializedCapacity: 32) { buffer in
            for index in 0..<32 {
                let word = index < 16 ? words.0 : words.1
                let nibble = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * (index % 16))) & 0xF
                buffer[index] = nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
            }
            return 32
        }
    }

    /// 1–128 characters of letters, digits and `-_.:@/+=` : enough for UUIDs, trace ids and
    /// load balancers' formats, nothing that could break a log line or a header.
    static func accepted(_ incoming: String?) -> String? {
        guard let incoming, (1...128).contains(incoming.utf8.count) else { return nil }
        let allowed = incoming.utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"):
                true
            default: "-_.:@/+=".utf8.contains(byte)
            }
        }
        return allowed ? incoming : nil
    }
}

/// What the gateway does around every routed HTTP request: gives it a request id (sent back
/// as `X-Request-Id` and bound for its log lines), counts and times it by route group and
/// status, and writes an access line (debug; warning for a 5xx).
enum HTTPObservation {
    static func middleware(router: Router, metrics: GatewayMetrics, logger: Logger) -> Middleware {
        { request, next in
            let id = RequestIDs.accepted(request.headers["X-Request-Id"]) ?? RequestIDs.next()
            let started = ContinuousClock.now
            return await RequestContext.$requestID.withValue(id) {
                var response = await next(request)
                // Render a handler's `.error(...)` now, so the header survives.
                if let error = response.error { response = router.renderError(error, for: request) }
                response.headers.replaceOrAdd(name: "X-Request-Id", value: id)
                let group = group(of: request, router: router)
                let seconds = MeteredTransport.seconds(since: started)
                metrics.httpRequests.increment([group, String(response.status)])
                metrics.httpRequestSeconds.observe(seconds, [group])
                let level: Logger.Level = response.status >= 500 ? .warning : .debug
                if logger.logLevel <= level {
                    logger.log(
                        level: level, "request answered",
                        metadata: [
                            "method": "\(request.method.rawValue)", "path": "\(request.path)",
                            "status": "\(response.status)", "group": "\(group)",
                            "duration_ms": "\(String(format: "%.3f", seconds * 1000))",
                        ])
                }
                return response
            }
        }
    }

    /// A bounded label for a request: which API it belongs to, not its path. A vendor's API is
    /// labelled by the provider whose route group claims the path (group names are provider
    /// names, so the label set stays bounded).
    static func group(of request: Request, router: Router) -> String {
        let path = request.path
        if path.hasPrefix("/api/v1/") { return "native" }
        if path.hasPrefix("/admin/api/") { return "admin" }
        if path == "/healthz" { return "health" }
        if path == "/metrics" { return "metrics" }
        if let provider = router.groupName(claiming: path) { return provider }
        if request.method == .GET || request.method == .HEAD { return "console" }
        return "other"
    }
}
