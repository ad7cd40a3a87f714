import Foundation
import TuisongCore
import TuisongDelivery

/// An OAuth 2.0 token endpoint's answer (RFC 6749 §5): `{"access_token", "expires_in"}`, or
/// `{"error": "invalid_grant", …}`. A refusal of the client (4xx) is the credential's fault;
/// anything else is the endpoint's, tried again later.
public enum OAuthTokenAnswer {
    public static func read(status: Int, body: [UInt8], retryAfter: String?, now: Date) -> Result<
        AccessToken, AccessTokenFailure
    > {
        let json = try? JSONValue(parsing: body)
        if status == 200, let value = json?["access_token"]?.stringValue, !value.isEmpty {
            let lifetime = json?["expires_in"]?.intValue ?? 3600
            return .success(AccessToken(value: value, expires: now.addingTimeInterval(TimeInterval(lifetime))))
        }
        // Google answers `"error": "invalid_grant"`; others an integer (`"error": 1101`).
        let code =
            json?["error"].map { $0.stringValue ?? String(decoding: $0.serialized(), as: UTF8.self) }
            ?? "HTTP\(status)"
        if status == 429 || status >= 500 || status == 200 {
            return .failure(.unavailable(.service(code), retryAfter: RetryAfter.parse(retryAfter, now: now)))
        }
        return .failure(.refused(.service(code)))
    }
}

/// `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
public enum RetryAfter {
    public static func parse(_ value: String?, now: Date) -> Duration? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if let seconds = Int64(value), seconds >= 0 { return .seconds(seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: value) else { return nil }
        return .seconds(max(0, Int64(date.timeIntervalSince(now).rounded(.up))))
    }
}
