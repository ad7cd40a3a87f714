import Foundation
import TuisongCore
import TuisongPlugin

/// The `"easemob"` section of the config, all keys optional:
///
///     "easemob": {
///       "requests_per_second": 100,   // per app, authenticated REST calls (Easemob's limit)
///       "burst": 200                  // calls allowed at once before the rate applies
///     }
///
/// Over the limit a call answers Easemob's 429 `reach_limit`. `POST token` has a bucket of its
/// own per app, taken before the client secret or password is checked, so guessing is slowed
/// while nobody can use up an app's quota without its credentials.
struct EasemobConfiguration: Sendable {
    var requestsPerSecond: Double = 100
    var burst: Double = 200

    init() {}

    init(_ section: JSONValue?) throws {
        try ProviderConfigSection.read(section, provider: EasemobAppSettings.vendor) { key, value in
            switch key {
            case "requests_per_second": requestsPerSecond = try value.number(in: 0.001...1_000_000)
            case "burst": burst = try value.number(in: 1...10_000_000)
            default: return false
            }
            return true
        }
    }
}

extension RateLimiter {
    /// Takes one token for `key`, or throws Easemob's 429.
    func take(_ key: String) throws(EasemobError) {
        guard allow(key) else {
            throw EasemobError(status: 429, error: "reach_limit", "This request has reached api limit")
        }
    }
}
