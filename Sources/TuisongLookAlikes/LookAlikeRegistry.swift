public import Logging
@_exported import TuisongAPNsLookAlike
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
        APNsLookAlike.declaration,
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

extension LookAlikeServer {
    /// A server of the standard look-alikes (`LookAlikeRegistry.standard`).
    public convenience init(
        configuration: LookAlikeConfiguration, certificate: Certificate, key: PrivateKey, chain: [Certificate] = [],
        requestLog: (@Sendable (String) -> Void)? = nil, logger: Logger = Logger(label: "tuisong.look-alikes")
    ) throws {
        try self.init(
            lookAlikes: .standard, configuration: configuration, certificate: certificate, key: key, chain: chain,
            requestLog: requestLog, logger: logger)
    }
}

extension LookAlikeLocalSetup {
    /// A fresh set-up with the standard look-alikes' credentials.
    public static func generate(bundleID: String) throws -> LookAlikeLocalSetup {
        try generate(bundleID: bundleID, lookAlikes: .standard)
    }

    /// The set-up saved at `path` (or a fresh one saved there) with the standard look-alikes'
    /// credentials.
    public static func loadOrGenerate(at path: String, bundleID: String) throws -> LookAlikeLocalSetup {
        try loadOrGenerate(at: path, bundleID: bundleID, lookAlikes: .standard)
    }

    /// A configuration trusting this set-up, the standard look-alikes' credentials included.
    public func configuration(
        host: String = "127.0.0.1", port: Int = 0, faults: LookAlikeConfiguration.Faults = .init()
    ) -> LookAlikeConfiguration {
        configuration(host: host, port: port, faults: faults, lookAlikes: .standard)
    }
}

extension LookAlikeConfiguration.Faults {
    /// The "magic token" set of local mode and `apns-mock --magic-tokens`: every standard
    /// look-alike's (`LookAlikeDeclaration.magicFaults`) and the token-based ones' shared set.
    public static var magicTokenPrefixes: LookAlikeConfiguration.Faults {
        magicTokenPrefixes(lookAlikes: .standard)
    }
}
