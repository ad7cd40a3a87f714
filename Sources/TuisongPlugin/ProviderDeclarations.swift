import TuisongCore
import TuisongHTTP

/// One app-level setting a provider needs (a vendor's API key, app id or org).
/// Declared once by the provider; the admin API, the console's vendor form, the CLI's
/// `tuisong app set-<vendor>` and `check-config` masking all derive from the declaration.
///
/// Stored in `App.vendorSettings[<provider name>]`: an ordinary value under `key`, a secret
/// sealed (`SecretSealer`, context `"<provider name>:app:<app id>"`) under `key + "_sealed"`.
public struct VendorSetting: Sendable {
    /// The name in the vendor's own words (`sdkappid`, `client_secret`).
    public var key: String
    public var label: LocalizedText
    /// Write-only: stored sealed, never returned or logged, shown as set or not set. The CLI
    /// reads it from an environment variable (`--<flag>-env VAR`), never the command line.
    public var isSecret: Bool
    /// No two apps may share the value (the provider finds the app by it).
    public var isUniqueAcrossApps: Bool
    /// Must be set for the vendor to be configured on an app.
    public var isRequired: Bool
    /// The CLI flag without dashes (`sdkappid`, `client-secret` → `--client-secret-env`).
    public var cliFlag: String
    /// Used when the value is not set (shown as a placeholder, never stored on its own).
    public var defaultValue: String?
    public var maxLength: Int
    /// Each setting of an ordinary value to another value is recorded as a rotation: a fresh
    /// random marker stored under `rotationKey` (kept when the same value is entered again,
    /// removed with the value), as a secret's sealed form is new each time it is set to another
    /// value. A provider ties what it issued to the marker, so changing the value and changing it
    /// back does not revive it (Easemob's app tokens and the client id). A value set before
    /// markers were recorded has none until it is next changed.
    public var isRotationTracked: Bool
    /// Why a value is not acceptable, or nil when it is.
    public var problem: @Sendable (String) -> String?

    public init(
        key: String, label: LocalizedText, isSecret: Bool = false, isUniqueAcrossApps: Bool = false,
        isRequired: Bool = true, cliFlag: String? = nil, defaultValue: String? = nil, maxLength: Int = 256,
        isRotationTracked: Bool = false, problem: @escaping @Sendable (String) -> String? = { _ in nil }
    ) {
        self.key = key
        self.label = label
        self.isSecret = isSecret
        self.isUniqueAcrossApps = isUniqueAcrossApps
        self.isRequired = isRequired
        self.cliFlag = cliFlag ?? key.replacingOccurrences(of: "_", with: "-")
        self.defaultValue = defaultValue
        self.maxLength = maxLength
        self.isRotationTracked = isRotationTracked && !isSecret
        self.problem = problem
    }

    /// Where the value lives in `App.vendorSettings[vendor]`.
    public var storageKey: String { isSecret ? key + "_sealed" : key }

    /// Where the rotation marker of an `isRotationTracked` setting lives in
    /// `App.vendorSettings[vendor]`.
    public var rotationKey: String { key + "_rotation" }
}

/// A column the console's device views show for a provider (a vendor's own device id); the values
/// come from the provider's `deviceColumnValues(appID:deviceIDs:)`.
public struct DeviceColumn: Sendable, Hashable {
    public var key: String
    public var label: LocalizedText

    public init(key: String, label: LocalizedText) {
        self.key = key
        self.label = label
    }
}

/// How a provider's devices name the credential they are sent through (the credential's
/// selector, stored with it and with each device that registers with it). Declared by a
/// provider whose vendor has one; `tuisong credential add --<cliFlag> VALUE` follows it (as
/// does the generic `--selector VALUE`).
///
///     CredentialSelectorDeclaration(
///         cliFlag: "notifier-name", help: "the certificate (notifier) name devices bind with")
public struct CredentialSelectorDeclaration: Sendable {
    /// The CLI flag without dashes (`notifier-name` → `--notifier-name VALUE`).
    public var cliFlag: String
    /// What the selector is, in the vendor's words, for the CLI's help.
    public var help: String
    /// Why a value is not acceptable as this vendor's selector, or nil when it is. Every
    /// selector is also trimmed, at most 128 characters and free of control characters.
    public var problem: @Sendable (String) -> String?

    public init(cliFlag: String, help: String, problem: @escaping @Sendable (String) -> String? = { _ in nil }) {
        self.cliFlag = cliFlag
        self.help = help
        self.problem = problem
    }
}
