import TuisongCore

/// Reads a provider's config section (`"acme": {…}`): an object whose keys the provider
/// knows, each checked where it is read, every mistake a `ProviderConfigError` naming the key.
///
///     try ProviderConfigSection.read(context.configuration, provider: "acme") { key, value in
///         switch key {
///         case "burst": burst = try value.number(in: 1...10_000_000)
///         default: return false
///         }
///         return true
///     }
public enum ProviderConfigSection {
    /// Calls `apply` for each key of the section (nothing when there is no section); `apply`
    /// answers false for a key it does not know, which is refused.
    public static func read(
        _ section: JSONValue?, provider: String,
        _ apply: (_ key: String, _ value: ProviderConfigValue) throws -> Bool
    ) throws {
        guard let section else { return }
        guard case .object(let members) = section else {
            throw ProviderConfigError(provider: provider, key: "", message: "must be an object")
        }
        for (key, value) in members.sorted(by: { $0.key < $1.key }) {
            guard try apply(key, ProviderConfigValue(provider: provider, key: key, value: value)) else {
                throw ProviderConfigError(provider: provider, key: key, message: "is not a known key")
            }
        }
    }
}

/// One value of a provider's config section, with the key it was found under.
public struct ProviderConfigValue: Sendable {
    public let provider: String
    public let key: String
    public let value: JSONValue

    /// The value as a number within `range`.
    public func number(in range: ClosedRange<Double>) throws -> Double {
        guard let number = value.doubleValue, range.contains(number) else {
            throw ProviderConfigError(
                provider: provider, key: key, message: "must be a number within \(range.lowerBound)…\(range.upperBound)"
            )
        }
        return number
    }
}
