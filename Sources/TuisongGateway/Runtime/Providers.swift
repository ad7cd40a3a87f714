import BaiduProvider
import EasemobProvider
import Foundation
import JPushProvider
import Logging
import TencentProvider
import TuisongCore
import TuisongHTTP
import TuisongPlugin
import TuisongStore

/// The vendor adapters this build knows: name → type. Adding a vendor is one line here.
public enum ProviderRegistry {
    public static let providers: [any PushProvider.Type] = [
        BaiduProvider.self, TencentProvider.self, JPushProvider.self, EasemobProvider.self,
    ]

    public static var names: [String] { providers.map { $0.name } }

    public static func provider(named name: String) -> (any PushProvider.Type)? {
        providers.first { $0.name == name }
    }

    /// Every known provider's migrations, mounted or not: the server, `tuisong migrate` and
    /// every other command open the database with the same schema.
    public static var pluginMigrations: [SQLiteStore.PluginSchema] {
        providers.map { SQLiteStore.PluginSchema(name: $0.name, migrations: $0.migrations) }
    }

    static func unknownProviderMessage(_ name: String) -> String {
        let known = names.sorted().joined(separator: ", ")
        return "unknown provider \"\(name)\" (this build has: \(known.isEmpty ? "none" : known))"
    }

    /// Builds the providers the config names, in its order, and mounts their routes.
    static func mount(
        _ names: [String], router: Router, context: (String) -> ProviderContext
    ) throws -> [any PushProvider] {
        var mounted: [any PushProvider] = []
        for name in names {
            guard let type = provider(named: name) else {
                throw ConfigError("providers", unknownProviderMessage(name))
            }
            let provider = try type.init(context: context(name))
            provider.register(on: router)
            mounted.append(provider)
        }
        return mounted
    }
}

/// Seals vendor secrets with the master key; the sealed text is base64. Public so the CLI
/// can store vendor secrets (`tuisong app set-baidu`) exactly as the gateway reads them.
public struct MasterKeySealer: SecretSealer {
    let masterKey: MasterKey

    public init(masterKey: MasterKey) {
        self.masterKey = masterKey
    }

    public func seal(_ plaintext: String, context: String) throws -> String {
        Data(try masterKey.box.seal(Array(plaintext.utf8), associatedData: Array(context.utf8))).base64EncodedString()
    }

    public func open(_ sealed: String, context: String) throws -> String {
        guard let bytes = Data(base64Encoded: sealed) else {
            throw ConfigError("", "a sealed secret is not base64")
        }
        return String(
            decoding: try masterKey.box.open(Array(bytes), associatedData: Array(context.utf8)), as: UTF8.self)
    }
}
