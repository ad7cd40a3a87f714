public import Logging
public import TuisongCrypto
@_exported import TuisongFCMLookAlike
@_exported import TuisongHarmonyLookAlike
@_exported import TuisongHonorLookAlike
@_exported import TuisongHuaweiLookAlike
// What links the look-alikes sees the kit and each look-alike's own accessors
// (`setup.huaweiClient`, `server.trustHuaweiClient`…) through this one module.
@_exported import TuisongLookAlikeKit
@_exported import TuisongOPPOLookAlike
@_exported import TuisongVivoLookAlike
@_exported import TuisongXiaomiLookAlike

extension LookAlikeRegistry {
    /// The look-alikes this build serves, one line each (a transport's look-alike is its folder's
    /// `LookAlike/`, Package.swift makes its target from the `transports` list).
    public static let standard = LookAlikeRegistry([
        FCMLookAlike.declaration,
        HuaweiLookAlike.declaration,
        HonorLookAlike.declaration,
        XiaomiLookAlike.declaration,
        OPPOLookAlike.declaration,
        VivoLookAlike.declaration,
        HarmonyLookAlike.declaration,
    ])
}

// The spellings without a registry: the standard one.

extension APNsMockServer {
    /// A server of the standard look-alikes (`LookAlikeRegistry.standard`).
    public convenience init(
        configuration: APNsMockConfiguration, certificate: Certificate, key: PrivateKey, chain: [Certificate] = [],
        requestLog: (@Sendable (String) -> Void)? = nil, logger: Logger = Logger(label: "tuisong.apns-mock")
    ) throws {
        try self.init(
            lookAlikes: .standard, configuration: configuration, certificate: certificate, key: key, chain: chain,
            requestLog: requestLog, logger: logger)
    }
}

extension APNsMockLocalSetup {
    /// A fresh set-up with the standard look-alikes' credentials.
    public static func generate(bundleID: String) throws -> APNsMockLocalSetup {
        try generate(bundleID: bundleID, lookAlikes: .standard)
    }

    /// The set-up saved at `path` (or a fresh one saved there) with the standard look-alikes'
    /// credentials.
    public static func loadOrGenerate(at path: String, bundleID: String) throws -> APNsMockLocalSetup {
        try loadOrGenerate(at: path, bundleID: bundleID, lookAlikes: .standard)
    }

    /// A configuration trusting this set-up, the standard look-alikes' credentials included.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: APNsMockConfiguration.Faults = .init()
    ) -> APNsMockConfiguration {
        configuration(host: host, port: port, faults: faults, lookAlikes: .standard)
    }
}
