import Foundation
import Synchronization
import TuisongCore
import TuisongCrypto
import TuisongHTTP

/// Where a call came in: what Easemob echoes in the envelope of every success.
struct EasemobCall: Sendable {
    var org: String
    var appName: String
    /// Easemob's `application`: the app's UUID (derived from the gateway's app id).
    var application: String
    var method: HTTPMethod
    /// Easemob's `path`: the resource collection (`/users`, `/chatgroups`, `/messages/users`).
    var resourcePath: String
    /// The request URL as the client addressed it.
    var uri: String
    var started: ContinuousClock.Instant

    init(org: String, appName: String, appID: Int64, request: Request, resourcePath: String) {
        self.org = org
        self.appName = appName
        application = EasemobIDs.applicationUUID(appID: appID)
        method = request.method
        self.resourcePath = resourcePath
        let forwarded = request.headers["X-Forwarded-Proto"]?.lowercased()
        let scheme = request.isTLS || forwarded == "https" ? "https" : "http"
        let host = request.headers["Host"] ?? "localhost"
        let path = request.rawTarget.prefix { $0 != "?" }
        uri = "\(scheme)://\(host)\(path)"
        started = ContinuousClock.now
    }

    var action: String { method.rawValue.lowercased() }
}

/// Easemob's answers: every success is HTTP 200 with the envelope `action, application, path,
/// uri, entities|data, timestamp, duration, organization, applicationName`; every failure is
/// `{"error", "error_description", "timestamp", "duration"}` with the vendor's status.
enum EasemobReply {
    static func success(
        _ call: EasemobCall, now: Date, entities: [JSONValue]? = nil, data: JSONValue? = nil,
        extra: [String: JSONValue] = [:]
    ) -> Response {
        var object = extra
        object["action"] = .string(call.action)
        object["application"] = .string(call.application)
        object["path"] = .string(call.resourcePath)
        object["uri"] = .string(call.uri)
        object["timestamp"] = .millis(now)
        object["duration"] = .int(call.elapsedMillis)
        object["organization"] = .string(call.org)
        object["applicationName"] = .string(call.appName)
        if let entities { object["entities"] = .array(entities) }
        if let data { object["data"] = data }
        return json(object, status: 200)
    }

    /// A bare object (the token grant answers without the envelope).
    static func plain(_ object: [String: JSONValue]) -> Response {
        json(object, status: 200)
    }

    static func failure(_ error: EasemobError, now: Date = Date(), duration: Int64 = 0) -> Response {
        var fields: [String: JSONValue] = [
            "error": .string(error.error), "error_description": .string(error.errorDescription),
            "timestamp": .millis(now), "duration": .int(duration),
        ]
        if let exception = error.exception { fields["exception"] = .string(exception) }
        var response = json(fields, status: error.status)
        if let retryAfter = error.retryAfter { response.headers.add(name: "Retry-After", value: String(retryAfter)) }
        return response
    }

    /// Renders the router's own errors (404, 405, 413, timeouts) on Easemob's paths.
    static let errorResponder: ErrorResponder = { error, _ in
        failure(EasemobError(error))
    }

    private static func json(_ object: [String: JSONValue], status: Int) -> Response {
        Response(
            status: status, headers: ["Content-Type": "application/json;charset=UTF-8"],
            body: JSONValue.object(object).serialized())
    }
}

extension EasemobCall {
    var elapsedMillis: Int64 {
        let elapsed = ContinuousClock.now - started
        return elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
    }
}

extension JSONValue {
    /// Epoch milliseconds, as Easemob writes every time (the same value the store keeps).
    static func millis(_ date: Date) -> JSONValue {
        .int(SQLTime.milliseconds(date))
    }
}

/// Easemob's identifiers.
enum EasemobIDs {
    /// The app's `application` UUID: derived, so it stays the same across restarts and nodes.
    static func applicationUUID(appID: Int64) -> String {
        // Every answer carries it: derived once per app, not hashed per call (a fiftieth of a
        // message call's work, issue #47's profile).
        if let known = applicationUUIDs.withLock({ $0[appID] }) { return known }
        let derived = uuid(from: Digest.sha256(Array("tuisong-easemob-application:\(appID)".utf8)))
        applicationUUIDs.withLock { known in
            if known.count >= 4096 { known.removeAll(keepingCapacity: true) }
            known[appID] = derived
        }
        return derived
    }

    private static let applicationUUIDs = Mutex<[Int64: String]>([:])

    /// A new random UUID (a user's `uuid`).
    static func randomUUID() -> String {
        uuid(from: SecureRandom.bytes(16))
    }

    /// A message id: 18 digits, like Easemob's (`1029457500870543736` has 19; clients treat it
    /// as a string).
    static func messageID() -> String {
        String(UInt64.random(in: 100_000_000_000_000_000..<999_999_999_999_999_999))
    }

    /// A group id: 15 digits, like Easemob's (`184524748161025`).
    static func groupID() -> String {
        String(UInt64.random(in: 100_000_000_000_000..<999_999_999_999_999))
    }

    private static func uuid(from source: [UInt8]) -> String {
        var bytes = Array(source.prefix(16))
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4 layout
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        let hex = Hex.encode(bytes)
        let parts = [
            hex.prefix(8), hex.dropFirst(8).prefix(4), hex.dropFirst(12).prefix(4), hex.dropFirst(16).prefix(4),
            hex.dropFirst(20),
        ]
        return parts.joined(separator: "-")
    }
}
