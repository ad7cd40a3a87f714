import Foundation
import TuisongCore
import TuisongPlugin

/// The provider's config section, all keys optional:
///
///     "baidu": {
///       "requests_per_second": 100,   // per apikey, REST calls after authentication
///       "burst": 200,                 // calls allowed at once before the rate applies
///       "signature_window_seconds": 600,
///       "report_utc_offset_hours": 8, // days of the statistics reports (Baidu: China time)
///       "report_days": 7
///     }
struct BaiduConfiguration: Sendable {
    var requestsPerSecond: Double = 100
    var burst: Double = 200
    /// A signature is valid this long around its `timestamp` (Baidu: timestamp + 10 min).
    var signatureWindow: TimeInterval = 600
    var reportUTCOffset: Int = 8 * 3600
    var reportDays: Int = 7

    init() {}

    init(_ section: JSONValue?) throws {
        try ProviderConfigSection.read(section, provider: BaiduProvider.name) { key, value in
            switch key {
            case "requests_per_second": requestsPerSecond = try value.number(in: 0.001...1_000_000)
            case "burst": burst = try value.number(in: 1...10_000_000)
            case "signature_window_seconds": signatureWindow = try value.number(in: 1...86_400)
            case "report_utc_offset_hours": reportUTCOffset = Int(try value.number(in: -12...14) * 3600)
            case "report_days": reportDays = Int(try value.number(in: 1...90))
            default: return false
            }
            return true
        }
    }
}
