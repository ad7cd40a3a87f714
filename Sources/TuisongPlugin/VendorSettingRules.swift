import TuisongCore

extension VendorSetting {
    /// Why `value` cannot be stored under this setting, or nil: longer than `maxLength`
    /// characters, or refused by the provider's own `problem`. An empty value is the caller's
    /// business (it clears an optional setting).
    public func rejection(of value: String) -> String? {
        if value.count > maxLength { return "must be at most \(maxLength) characters" }
        return problem(value)
    }
}

extension PushProvider {
    /// The declaration of `key` among `settings`.
    public static func setting(_ key: String) -> VendorSetting? {
        settings.first { $0.key == key }
    }
}
