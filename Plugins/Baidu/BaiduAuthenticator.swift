import Foundation
import Logging
import TuisongCore
import TuisongHTTP
import TuisongPlugin

/// An app that proved its identity with a valid Baidu signature.
struct BaiduCaller: Sendable {
    let app: App
    let keys: BaiduKeys
}

/// Authenticates a REST call the way Baidu did: `apikey` names the app, `timestamp` (and
/// optional `expires`) bound the signature's life, `sign` is the MD5 signature over method,
/// URL, sorted parameters and the app's secret key. Then the apikey's rate limit applies
/// (after the signature, so nobody can use up an app's quota with its public apikey).
struct BaiduAuthenticator: Sendable {
    let baiduStore: BaiduStore
    let secrets: any SecretSealer
    let clock: any TuisongCore.Clock
    let limiter: RateLimiter
    let window: TimeInterval
    let logger: Logger

    func authenticate(_ request: Request, _ parameters: BaiduParameters) async throws(BaiduError) -> BaiduCaller {
        let apiKey = try parameters.required("apikey")
        let timestampText = try parameters.required("timestamp")
        guard let timestamp = BaiduParameters.parseInteger(timestampText) else {
            throw .invalidParameter("timestamp", "must be Unix seconds, got \"\(timestampText.prefix(40))\"")
        }
        let expires = try parameters.optionalInteger("expires", in: 0...Int(Int64.max))
        let sign = try parameters.required("sign")

        let now = Int(clock.now.timeIntervalSince1970.rounded(.down))
        let slack = Int(window)
        if timestamp > now + slack {
            throw BaiduError(.requestExpired, "timestamp \(timestamp) is in the future (server time \(now))")
        }
        if let expires {
            guard now <= expires else {
                throw BaiduError(.requestExpired, "expires \(expires) has passed (server time \(now))")
            }
        } else if now > timestamp + slack {
            throw BaiduError(
                .requestExpired, "timestamp \(timestamp) is more than \(slack) s old (server time \(now))")
        }

        let app: App?
        do {
            app = try await baiduStore.app(apiKey: apiKey)
        } catch {
            logger.error("baidu: looking up an apikey failed", metadata: ["error": "\(error)"])
            throw BaiduError(.internalError, "the store is unavailable")
        }
        guard let app else { throw BaiduError(.authenticationFailed, "unknown apikey \(apiKey)") }
        let keys: BaiduKeys
        do {
            guard let opened = try BaiduKeys.of(app, sealer: secrets) else {
                throw BaiduError(.authenticationFailed, "unknown apikey \(apiKey)")
            }
            keys = opened
        } catch let error as BaiduError {
            throw error
        } catch {
            // The secret does not open under this master key: an operator problem, not the caller's.
            logger.error(
                "baidu: an app's secret key cannot be opened", metadata: ["app": "\(app.id)", "error": "\(error)"])
            throw BaiduError(.internalError, "the app's secret key cannot be read")
        }
        let urls = Self.candidateURLs(request)
        guard
            BaiduSignature.verify(
                sign: sign, method: request.method.rawValue, urls: urls, parameters: parameters.pairs,
                secretKey: keys.secretKey)
        else {
            logger.info(
                "baidu: bad sign",
                metadata: [
                    "apikey": "\(apiKey)", "method": "\(request.method.rawValue)",
                    "url": "\(urls.first ?? request.path)",
                ])
            throw BaiduError(.authenticationFailed, "sign does not match")
        }
        guard limiter.allow(apiKey) else {
            throw BaiduError(.tooFrequent, "apikey \(apiKey) is over its request rate")
        }
        return BaiduCaller(app: app, keys: keys)
    }

    /// The URLs the client may have signed: the path as it sent it, on the host it addressed
    /// (`Host`, or `X-Forwarded-Host` behind a proxy), with http or https (a TLS-terminating
    /// proxy hides which one the client used).
    static func candidateURLs(_ request: Request) -> [String] {
        var paths = [rawPath(request.rawTarget)]
        if request.path != paths[0] { paths.append(request.path) }
        var hosts: [String] = []
        for header in ["X-Forwarded-Host", "Host"] {
            if let value = request.headers[header]?.split(separator: ",").first?
                .trimmingCharacters(in: .whitespaces), !value.isEmpty, !hosts.contains(value)
            {
                hosts.append(value)
            }
        }
        if let absolute = absoluteAuthority(request.rawTarget), !hosts.contains(absolute) {
            hosts.append(absolute)
        }
        var urls: [String] = []
        for scheme in request.isTLS ? ["https", "http"] : ["http", "https"] {
            for host in hosts {
                for path in paths { urls.append("\(scheme)://\(host)\(path)") }
            }
        }
        return urls
    }

    /// The path of a request target without its query: `/rest/3.0/push/all?x` → `/rest/3.0/push/all`,
    /// `http://h/rest/…` → `/rest/…`.
    private static func rawPath(_ target: String) -> String {
        var rest = Substring(target)
        if !rest.hasPrefix("/"), let schemeEnd = rest.range(of: "://") {
            rest = rest[schemeEnd.upperBound...]
            rest = rest.firstIndex(of: "/").map { rest[$0...] } ?? "/"
        }
        if let end = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<end] }
        return String(rest)
    }

    private static func absoluteAuthority(_ target: String) -> String? {
        guard !target.hasPrefix("/"), let schemeEnd = target.range(of: "://") else { return nil }
        let rest = target[schemeEnd.upperBound...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" }
        return authority.isEmpty ? nil : String(authority)
    }
}
