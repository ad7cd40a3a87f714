import Foundation
import TuisongCore
import TuisongCrypto
import TuisongPlugin

/// The per-vendor settings an app can carry, as the console and the CLI edit them, derived
/// from the registered providers' declarations (`PushProvider.settings`): a vendor adapter
/// that needs a setting declares it in its plugin, nowhere else.
///
/// Stored in `App.vendorSettings[vendor]`: an ordinary setting under its key, a secret sealed
/// with the master key under `<key>_sealed` (`SecretSealer`, context `"<vendor>:app:<app id>"`),
/// so the provider reads it with `secrets.open(settings["secret_key_sealed"], context:
/// "<vendor>:app:\(app.id)")`.
enum AdminVendorSettings {
    struct Vendor: Sendable {
        let name: String
        let displayName: LocalizedText
        let settings: [VendorSetting]
        let uniqueTogether: [[String]]
    }

    /// Every registered provider that declares settings, in registry order.
    static func vendors(_ providers: [any PushProvider.Type] = ProviderRegistry.providers) -> [Vendor] {
        providers.filter { !$0.settings.isEmpty }.map {
            Vendor(
                name: $0.name, displayName: $0.displayName, settings: $0.settings,
                uniqueTogether: $0.settingsUniqueTogether)
        }
    }

    static func sealingContext(vendor: String, appID: Int64) -> String {
        "\(vendor):app:\(appID)"
    }

    /// The declarations for the console: `[{"vendor": "acme", "label": {"en", "zh"}, "fields":
    /// [{"key", "label", "secret", "required", "unique", "default", "max_length"}]}]`.
    static func schemaObject(_ providers: [any PushProvider.Type] = ProviderRegistry.providers) -> [[String: Any]] {
        vendors(providers).map { vendor in
            [
                "vendor": vendor.name,
                "label": ["en": vendor.displayName.en, "zh": vendor.displayName.zh],
                "fields": vendor.settings.map { setting -> [String: Any] in
                    [
                        "key": setting.key,
                        "label": ["en": setting.label.en, "zh": setting.label.zh],
                        "secret": setting.isSecret,
                        "required": setting.isRequired,
                        "unique": setting.isUniqueAcrossApps,
                        "default": setting.defaultValue.map { $0 as Any } ?? NSNull(),
                        "max_length": setting.maxLength,
                    ]
                },
            ]
        }
    }

    /// The settings as the console may see them: plain values of ordinary settings, only
    /// whether a secret is set.
    static func view(
        _ settings: [String: [String: String]], providers: [any PushProvider.Type] = ProviderRegistry.providers
    ) -> [String: Any] {
        var result: [String: Any] = [:]
        for vendor in vendors(providers) {
            let stored = settings[vendor.name] ?? [:]
            var fields: [String: Any] = [:]
            for setting in vendor.settings {
                let value = stored[setting.storageKey] ?? ""
                if setting.isSecret {
                    fields[setting.key] = ["set": !value.isEmpty]
                } else {
                    fields[setting.key] = ["set": !value.isEmpty, "value": value]
                }
            }
            result[vendor.name] = fields
        }
        return result
    }

    /// Applies an edit `{"acme": {"apikey": "…", "secret_key": "…"}}` to `app`:
    /// - an ordinary setting is set to the string given ("" clears it);
    /// - a secret given as a non-empty string is sealed and stored; "" clears it; absent or
    ///   null leaves it unchanged (the console never has the old value to resend). A secret
    ///   given again with the value it has keeps its sealed form (found in the app's settings, or
    ///   in `previous` when they were cleared first): setting a secret to a new value is a
    ///   rotation a provider may tie what it issued to (Easemob's tokens), entering the same one
    ///   again is not;
    /// - an ordinary setting declared `isRotationTracked` gets a fresh rotation marker each time
    ///   it is set to another value, keeps its marker when given the value it has, and loses it
    ///   when cleared (`VendorSetting.rotationKey`).
    /// Each value is checked against its declaration (length, the provider's own rule, unique
    /// across `otherApps`).
    static func apply(
        _ edit: [String: Any], to app: inout App, sealer: any SecretSealer, otherApps: [App],
        providers: [any PushProvider.Type] = ProviderRegistry.providers, previous: [String: [String: String]] = [:]
    ) throws {
        let known = vendors(providers)
        for (vendorName, rawFields) in edit {
            guard let vendor = known.first(where: { $0.name == vendorName }) else {
                throw AdminError.invalid(
                    "vendors.\(vendorName)",
                    "unknown vendor \"\(vendorName)\"; known: \(known.map(\.name).joined(separator: ", "))")
            }
            guard let fields = rawFields as? [String: Any] else {
                throw AdminError.invalid("vendors.\(vendorName)", "vendors.\(vendorName) must be an object")
            }
            var stored = app.vendorSettings[vendorName] ?? [:]
            for (key, rawValue) in fields {
                let path = "vendors.\(vendorName).\(key)"
                guard let setting = vendor.settings.first(where: { $0.key == key }) else {
                    throw AdminError.invalid(path, "unknown setting \"\(key)\" for \(vendorName)")
                }
                if rawValue is NSNull { continue }
                guard let text = rawValue as? String else { throw AdminError.invalid(path, "\(path) must be a string") }
                let value = setting.isSecret ? text : text.trimmingCharacters(in: .whitespacesAndNewlines)
                if value.isEmpty {
                    stored.removeValue(forKey: setting.storageKey)
                    if setting.isRotationTracked { stored.removeValue(forKey: setting.rotationKey) }
                    continue
                }
                if let problem = setting.rejection(of: value) {
                    throw AdminError.invalid(path, "\(vendorName) \(key) \(problem)")
                }
                if setting.isUniqueAcrossApps,
                    let other = otherApps.first(where: {
                        $0.id != app.id && $0.vendorSettings[vendorName]?[setting.storageKey] == value
                    })
                {
                    throw AdminError.conflict(path, "app \"\(other.name)\" already uses this \(vendorName) \(key)")
                }
                if setting.isSecret {
                    let context = sealingContext(vendor: vendorName, appID: app.id)
                    if let sealed = stored[setting.storageKey] ?? previous[vendorName]?[setting.storageKey],
                        (try? sealer.open(sealed, context: context)) == value
                    {
                        stored[setting.storageKey] = sealed
                        continue
                    }
                    do {
                        stored[setting.storageKey] = try sealer.seal(value, context: context)
                    } catch {
                        throw AdminError(500, "internal_error", "the secret could not be encrypted")
                    }
                } else {
                    if setting.isRotationTracked {
                        let before = stored[setting.storageKey] ?? previous[vendorName]?[setting.storageKey]
                        if before != value {
                            stored[setting.rotationKey] = Base64URL.encode(SecureRandom.bytes(16))
                        } else if let marker = stored[setting.rotationKey] ?? previous[vendorName]?[setting.rotationKey]
                        {
                            stored[setting.rotationKey] = marker
                        }
                    }
                    stored[setting.storageKey] = value
                }
            }
            for keys in vendor.uniqueTogether {
                let values = keys.map { stored[$0] }
                guard values.allSatisfy({ $0 != nil }) else { continue }
                if let other = otherApps.first(where: { other in
                    other.id != app.id && keys.map({ other.vendorSettings[vendorName]?[$0] }) == values
                }) {
                    let names = keys.joined(separator: " + ")
                    throw AdminError.conflict(
                        "vendors.\(vendorName).\(keys[0])",
                        "app \"\(other.name)\" already uses this \(vendorName) \(names)")
                }
            }
            if stored.isEmpty {
                app.vendorSettings.removeValue(forKey: vendorName)
            } else {
                app.vendorSettings[vendorName] = stored
            }
        }
    }
}

/// An app's settings for one vendor, replaced as `tuisong app set-<vendor>` does: by the
/// provider's declarations, the same checks and sealing as the console.
public enum VendorSettingsUpdate {
    /// A value the declarations refuse, or an app that already holds a unique value.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    /// Replaces `app.vendorSettings[vendor]` with `values` (setting key → value, secrets in
    /// clear; sealed here); settings left out are cleared. Required settings must be given.
    public static func replace(
        vendor: String, with values: [String: String], in app: inout App, sealer: any SecretSealer,
        otherApps: [App], providers: [any PushProvider.Type] = ProviderRegistry.providers
    ) throws(Refusal) {
        guard let provider = providers.first(where: { $0.name == vendor }), !provider.settings.isEmpty else {
            throw Refusal(description: "no provider \"\(vendor)\" with settings in this build")
        }
        for setting in provider.settings where setting.isRequired && (values[setting.key] ?? "").isEmpty {
            throw Refusal(description: "\(setting.key) is required")
        }
        var edit: [String: Any] = [:]
        for setting in provider.settings { edit[setting.key] = values[setting.key] ?? "" }
        var updated = app
        updated.vendorSettings.removeValue(forKey: vendor)
        do {
            try AdminVendorSettings.apply(
                [vendor: edit], to: &updated, sealer: sealer, otherApps: otherApps, providers: providers,
                previous: app.vendorSettings)
        } catch let error as AdminError {
            throw Refusal(description: error.message)
        } catch {
            throw Refusal(description: "\(error)")
        }
        app = updated
    }
}
