import Foundation
import TuisongCore
import TuisongPlugin

/// The per-vendor settings an app can carry, as the console edits them. Stored in
/// `App.vendorSettings[vendor][key]`; a secret field's value is stored sealed with the
/// master key (`SecretSealer`, context `"<vendor>:app:<app id>"`), so the provider that reads
/// it calls `secrets.open(value, context: "baidu:app:\(app.id)")`.
///
/// A vendor adapter that needs another setting adds its field here; the console renders
/// whatever this table lists.
enum AdminVendorSettings {
    struct Field: Sendable {
        /// The key in `App.vendorSettings[vendor]`, in the vendor's own words.
        let key: String
        /// Write-only: stored sealed, never returned, shown as set or not set.
        let secret: Bool
        /// No two apps may share the value (the provider finds the app by it).
        let unique: Bool
        let maxLength: Int
    }

    struct Vendor: Sendable {
        let name: String
        let fields: [Field]
    }

    static let vendors: [Vendor] = [
        Vendor(
            name: "baidu",
            fields: [
                Field(key: "apikey", secret: false, unique: true, maxLength: 128),
                Field(key: "secret_key", secret: true, unique: false, maxLength: 256),
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
                let value = stored[field.key] ?? ""
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
                    stored.removeValue(forKey: key)
                    continue
                }
                if field.unique,
                    let other = otherApps.first(where: { $0.id != app.id && $0.vendorSettings[vendorName]?[key] == value })
                {
                    throw AdminError.conflict(path, "app \"\(other.name)\" already uses this \(vendorName) \(key)")
                }
                if field.secret {
                    do {
                        stored[key] = try sealer.seal(value, context: sealingContext(vendor: vendorName, appID: app.id))
                    } catch {
                        throw AdminError(500, "internal_error", "the secret could not be encrypted")
                    }
                } else {
                    stored[key] = value
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
