import BaiduProvider
import Foundation
import TuisongCore
import TuisongPlugin

/// The per-vendor settings an app can carry, as the console edits them. Stored in
/// `App.vendorSettings[vendor]`: an ordinary field under its key, a secret field sealed with
/// the master key under `<key>_sealed` (`SecretSealer`, context `"<vendor>:app:<app id>"`), so
/// the provider reads it with `secrets.open(settings["secret_key_sealed"], context:
/// "baidu:app:\(app.id)")`, as `BaiduKeys.of` does.
///
/// A vendor adapter that needs another setting adds its field here; the console renders
/// whatever this table lists.
enum AdminVendorSettings {
    struct Field: Sendable {
        /// The setting's name, in the vendor's own words.
        let key: String
        /// Write-only: stored sealed, never returned, shown as set or not set.
        let secret: Bool
        /// No two apps may share the value (the provider finds the app by it).
        let unique: Bool
        let maxLength: Int
        /// Why a value is not acceptable, or nil when it is.
        var problem: @Sendable (String) -> String? = { _ in nil }

        /// Where the value lives in `App.vendorSettings[vendor]`.
        var storageKey: String { secret ? key + "_sealed" : key }
    }

    struct Vendor: Sendable {
        let name: String
        let fields: [Field]
    }

    static let vendors: [Vendor] = [
        Vendor(
            name: "baidu",
            fields: [
                // The same rules as BaiduKeys, which the Baidu provider reads these with.
                Field(key: "apikey", secret: false, unique: true, maxLength: 64) { value in
                    BaiduKeys.isValidAPIKey(value) ? nil : "must be 1–64 letters, digits, - or _"
                },
                Field(key: "secret_key", secret: true, unique: false, maxLength: 256) { value in
                    value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F }
                        ? nil : "must be printable ASCII characters without spaces"
                },
                Field(key: "app_id", secret: false, unique: false, maxLength: 20) { value in
                    value.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
                        ? nil : "Baidu's app id is digits"
                },
            ]),
        Vendor(
            name: "tencent",
            fields: [
                Field(key: "sdkappid", secret: false, unique: true, maxLength: 32),
                Field(key: "key", secret: true, unique: false, maxLength: 512),
                Field(key: "admin_identifier", secret: false, unique: false, maxLength: 128),
            ]),
        Vendor(
            name: "easemob",
            fields: [
                Field(key: "org_name", secret: false, unique: false, maxLength: 128),
                Field(key: "app_name", secret: false, unique: false, maxLength: 128),
                Field(key: "client_id", secret: false, unique: false, maxLength: 256),
                Field(key: "client_secret", secret: true, unique: false, maxLength: 512),
            ]),
    ]

    static func vendor(named name: String) -> Vendor? {
        vendors.first { $0.name == name }
    }

    static func sealingContext(vendor: String, appID: Int64) -> String {
        "\(vendor):app:\(appID)"
    }

    /// The schema for the console: `[{"vendor": "baidu", "fields": [{"key", "secret"}]}]`.
    static var schemaObject: [[String: Any]] {
        vendors.map { vendor in
            [
                "vendor": vendor.name,
                "fields": vendor.fields.map { ["key": $0.key, "secret": $0.secret, "max_length": $0.maxLength] },
            ]
        }
    }

    /// The settings as the console may see them: plain values of ordinary fields, only
    /// whether a secret field is set.
    static func view(_ settings: [String: [String: String]]) -> [String: Any] {
        var result: [String: Any] = [:]
        for vendor in vendors {
            let stored = settings[vendor.name] ?? [:]
            var fields: [String: Any] = [:]
            for field in vendor.fields {
                let value = stored[field.storageKey] ?? ""
                if field.secret {
                    fields[field.key] = ["set": !value.isEmpty]
                } else {
                    fields[field.key] = ["set": !value.isEmpty, "value": value]
                }
            }
            result[vendor.name] = fields
        }
        return result
    }

    /// Applies an edit `{"baidu": {"apikey": "…", "secret_key": "…"}}` to `app`:
    /// - an ordinary field is set to the string given ("" clears it);
    /// - a secret field given as a non-empty string is sealed and stored; "" clears it;
    ///   absent or null leaves it unchanged (the console never has the old value to resend).
    static func apply(
        _ edit: [String: Any], to app: inout App, sealer: any SecretSealer, otherApps: [App]
    ) throws {
        for (vendorName, rawFields) in edit {
            guard let vendor = vendor(named: vendorName) else {
                throw AdminError.invalid(
                    "vendors.\(vendorName)",
                    "unknown vendor \"\(vendorName)\"; known: \(vendors.map(\.name).joined(separator: ", "))")
            }
            guard let fields = rawFields as? [String: Any] else {
                throw AdminError.invalid("vendors.\(vendorName)", "vendors.\(vendorName) must be an object")
            }
            var stored = app.vendorSettings[vendorName] ?? [:]
            for (key, rawValue) in fields {
                let path = "vendors.\(vendorName).\(key)"
                guard let field = vendor.fields.first(where: { $0.key == key }) else {
                    throw AdminError.invalid(path, "unknown setting \"\(key)\" for \(vendorName)")
                }
                if rawValue is NSNull { continue }
                guard let text = rawValue as? String else { throw AdminError.invalid(path, "\(path) must be a string") }
                let value = field.secret ? text : text.trimmingCharacters(in: .whitespacesAndNewlines)
                guard value.count <= field.maxLength else {
                    throw AdminError.invalid(path, "\(path) must be at most \(field.maxLength) characters")
                }
                if value.isEmpty {
                    stored.removeValue(forKey: field.storageKey)
                    continue
                }
                if let problem = field.problem(value) {
                    throw AdminError.invalid(path, "\(vendorName) \(key) \(problem)")
                }
                if field.unique,
                    let other = otherApps.first(where: {
                        $0.id != app.id && $0.vendorSettings[vendorName]?[key] == value
                    })
                {
                    throw AdminError.conflict(path, "app \"\(other.name)\" already uses this \(vendorName) \(key)")
                }
                if field.secret {
                    do {
                        stored[field.storageKey] = try sealer.seal(
                            value, context: sealingContext(vendor: vendorName, appID: app.id))
                    } catch {
                        throw AdminError(500, "internal_error", "the secret could not be encrypted")
                    }
                } else {
                    stored[field.storageKey] = value
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
