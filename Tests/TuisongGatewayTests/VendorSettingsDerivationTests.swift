import Foundation
import Testing
import TuisongCore
import TuisongHTTP
import TuisongPlugin

@testable import TuisongGateway

/// A provider that only declares (Tencent's expected settings): what the admin API, the
/// console schema and `check-config` derive from the declarations, for any vendor.
private struct DeclaringProvider: PushProvider {
    static let name = "declaring"
    static let displayName = LocalizedText(en: "Declaring IM", zh: "声明 IM")
    static let settings = [
        VendorSetting(
            key: "sdkappid", label: LocalizedText(en: "SDKAppID", zh: "SDKAppID"), isUniqueAcrossApps: true,
            maxLength: 20, problem: { $0.allSatisfy(\.isNumber) ? nil : "must be digits" }),
        VendorSetting(
            key: "secret_key", label: LocalizedText(en: "Key", zh: "密钥"), isSecret: true, cliFlag: "secret"),
        VendorSetting(
            key: "admin_identifier", label: LocalizedText(en: "Admin", zh: "管理员"), isRequired: false,
            cliFlag: "admin", defaultValue: "administrator"),
    ]

    init(context: ProviderContext) throws {}
    func register(on router: Router) {}
}

/// A provider whose client id is rotation-tracked, as Easemob's is.
private struct TrackingProvider: PushProvider {
    static let name = "tracking"
    static let settings = [
        VendorSetting(key: "client_id", label: LocalizedText(en: "Client", zh: "客户端"), isRotationTracked: true),
        VendorSetting(key: "region", label: LocalizedText(en: "Region", zh: "地区"), isRequired: false),
    ]

    init(context: ProviderContext) throws {}
    func register(on router: Router) {}
}

private struct Sealer: SecretSealer {
    func seal(_ plaintext: String, context: String) throws -> String { "sealed(\(context)):\(plaintext.count)" }
    func open(_ sealed: String, context: String) throws -> String { "" }
}

@Suite struct VendorSettingsDerivationTests {
    let providers: [any PushProvider.Type] = [DeclaringProvider.self]

    func app(_ id: Int64, _ settings: [String: [String: String]] = [:]) -> App {
        App(
            id: id, name: "app \(id)", bundleID: "com.example.a", apiKeyHash: "h\(id)", createdAt: Date(),
            updatedAt: Date(), vendorSettings: settings)
    }

    @Test func schemaCarriesLabelsSecretRequiredDefault() throws {
        let schema = AdminVendorSettings.schemaObject(providers)
        #expect(schema.count == 1)
        #expect(schema[0]["vendor"] as? String == "declaring")
        #expect(schema[0]["label"] as? [String: String] == ["en": "Declaring IM", "zh": "声明 IM"])
        let fields = try #require(schema[0]["fields"] as? [[String: Any]])
        #expect(fields.map { $0["key"] as? String } == ["sdkappid", "secret_key", "admin_identifier"])
        #expect(fields[1]["secret"] as? Bool == true)
        #expect(fields[2]["required"] as? Bool == false)
        #expect(fields[2]["default"] as? String == "administrator")
        #expect(fields[0]["default"] is NSNull)
        #expect(fields[1]["label"] as? [String: String] == ["en": "Key", "zh": "密钥"])
    }

    @Test func editsFollowTheDeclarations() throws {
        var edited = app(1)
        try AdminVendorSettings.apply(
            ["declaring": ["sdkappid": " 1400000001 ", "secret_key": "k"]], to: &edited, sealer: Sealer(),
            otherApps: [], providers: providers)
        #expect(
            edited.vendorSettings["declaring"] == [
                "sdkappid": "1400000001", "secret_key_sealed": "sealed(declaring:app:1):1",
            ])
        let view = AdminVendorSettings.view(edited.vendorSettings, providers: providers)
        let fields = try #require(view["declaring"] as? [String: [String: Any]])
        #expect(fields["secret_key"]?["set"] as? Bool == true)
        #expect(fields["secret_key"]?["value"] == nil)
        #expect(fields["admin_identifier"]?["set"] as? Bool == false)

        var other = app(2)
        #expect(throws: AdminError.self) {
            try AdminVendorSettings.apply(
                ["declaring": ["sdkappid": "1400000001"]], to: &other, sealer: Sealer(), otherApps: [edited],
                providers: providers)
        }
        #expect(throws: AdminError.self) {
            try AdminVendorSettings.apply(
                ["declaring": ["sdkappid": "14x"]], to: &other, sealer: Sealer(), otherApps: [], providers: providers)
        }
        #expect(throws: AdminError.self) {
            try AdminVendorSettings.apply(
                ["baidu": ["apikey": "x"]], to: &other, sealer: Sealer(), otherApps: [], providers: providers)
        }
    }

    @Test func replaceAsTheCLIDoesNeedsRequiredSettings() throws {
        var target = app(3, ["declaring": ["stale": "x"]])
        #expect(throws: VendorSettingsUpdate.Refusal.self) {
            try VendorSettingsUpdate.replace(
                vendor: "declaring", with: ["sdkappid": "1"], in: &target, sealer: Sealer(), otherApps: [],
                providers: providers)
        }
        try VendorSettingsUpdate.replace(
            vendor: "declaring", with: ["sdkappid": "1", "secret_key": "abc", "admin_identifier": "boss"], in: &target,
            sealer: Sealer(), otherApps: [], providers: providers)
        #expect(
            target.vendorSettings["declaring"] == [
                "sdkappid": "1", "secret_key_sealed": "sealed(declaring:app:3):3", "admin_identifier": "boss",
            ])
    }

    /// A sealer whose every sealing is new (a counter standing in for AES-GCM's random nonce).
    private final class CountingSealer: SecretSealer, @unchecked Sendable {
        // @unchecked: used by one test at a time, on one task.
        var sealed = 0
        func seal(_ plaintext: String, context: String) throws -> String {
            sealed += 1
            return "\(sealed):\(plaintext)"
        }
        func open(_ sealed: String, context: String) throws -> String {
            String(sealed.drop { $0 != ":" }.dropFirst())
        }
    }

    /// Setting a secret to a new value is a rotation (a new sealed form, which Easemob ties its
    /// tokens to); entering the same value again, in the console or the CLI, is not.
    @Test func aSecretEnteredAgainUnchangedKeepsItsSealedForm() throws {
        let sealer = CountingSealer()
        var target = app(4)
        func secret() -> String? { target.vendorSettings["declaring"]?["secret_key_sealed"] }
        try AdminVendorSettings.apply(
            ["declaring": ["sdkappid": "1", "secret_key": "old"]], to: &target, sealer: sealer, otherApps: [],
            providers: providers)
        let first = try #require(secret())
        try AdminVendorSettings.apply(
            ["declaring": ["secret_key": "old"]], to: &target, sealer: sealer, otherApps: [], providers: providers)
        #expect(secret() == first)
        try VendorSettingsUpdate.replace(
            vendor: "declaring", with: ["sdkappid": "1", "secret_key": "old"], in: &target, sealer: sealer,
            otherApps: [], providers: providers)
        #expect(secret() == first, "the CLI's replace keeps it too")
        try AdminVendorSettings.apply(
            ["declaring": ["secret_key": "new"]], to: &target, sealer: sealer, otherApps: [], providers: providers)
        let rotated = try #require(secret())
        #expect(rotated != first)
        // The old value set again: a rotation too, with a sealed form of its own.
        try AdminVendorSettings.apply(
            ["declaring": ["secret_key": "old"]], to: &target, sealer: sealer, otherApps: [], providers: providers)
        #expect(secret() != first && secret() != rotated)
    }

    /// A tracked setting set to another value gets a fresh marker (so a provider can tell a
    /// value changed and changed back from one never changed); entered again unchanged, in the
    /// console or the CLI, it keeps its marker, or its lack of one (a value set before markers).
    @Test func aRotationTrackedSettingGetsAFreshMarkerEachTimeItChanges() throws {
        let providers: [any PushProvider.Type] = [TrackingProvider.self]
        var target = app(5, ["tracking": ["client_id": "set-before-markers"]])
        func marker() -> String? { target.vendorSettings["tracking"]?["client_id_rotation"] }
        func edit(_ fields: [String: String]) throws {
            try AdminVendorSettings.apply(
                ["tracking": fields], to: &target, sealer: Sealer(), otherApps: [], providers: providers)
        }
        func replace(_ values: [String: String]) throws {
            try VendorSettingsUpdate.replace(
                vendor: "tracking", with: values, in: &target, sealer: Sealer(), otherApps: [], providers: providers)
        }
        try edit(["client_id": "set-before-markers", "region": "cn"])
        try replace(["client_id": "set-before-markers", "region": "eu"])
        #expect(marker() == nil)
        try edit(["client_id": "a"])
        let first = try #require(marker())
        try edit(["client_id": "a", "region": "us"])
        try replace(["client_id": "a"])
        #expect(marker() == first)
        try replace(["client_id": "b"])
        let second = try #require(marker())
        #expect(second != first)
        try edit(["client_id": "a"])
        #expect(marker() != first && marker() != second)
        // Cleared, it goes with the value: nothing of the vendor is left.
        try edit(["client_id": "", "region": ""])
        #expect(target.vendorSettings["tracking"] == nil)
        // The view never shows it.
        try edit(["client_id": "c"])
        let view = AdminVendorSettings.view(target.vendorSettings, providers: providers)
        #expect((view["tracking"] as? [String: Any])?.keys.sorted() == ["client_id", "region"])
    }

    @Test func checkConfigMasksDeclaredSecretsOfProviderSections() throws {
        let config = try GatewayConfig.load(
            fileContents: Data(#"{"baidu": {"secret_key": "plain-secret-value", "requests_per_second": 5}}"#.utf8),
            environment: [:])
        let masked = config.maskedJSON()
        #expect(!masked.contains("plain-secret-value"))
        #expect(masked.contains("requests_per_second"))
        #expect(GatewayConfig.vendorSecretKeys["baidu"]?.contains("secret_key") == true)
        #expect(GatewayConfig.openSections == Set(ProviderRegistry.names))
    }
}
