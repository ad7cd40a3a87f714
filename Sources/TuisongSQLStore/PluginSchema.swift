import TuisongCore

/// One plugin's migrations (`PushProvider.migrations`), recorded as `<name>:<identifier>`:
/// what both backends apply after their core migrations when they open a database.
public struct PluginSchema: Sendable {
    public var name: String
    public var migrations: [PluginMigration]

    public init(name: String, migrations: [PluginMigration]) {
        self.name = name
        self.migrations = migrations
    }
}

extension PluginSchema {
    /// Each plugin's migrations as both backends record them (`<plugin>:<identifier>`), in
    /// declaration order, after checking them: throws for a plugin name that is empty or holds
    /// `:`, and for a migration identifier that is empty or repeats (or repeats a core one).
    package static func recordedIdentifiers(_ plugins: [PluginSchema], core: [String]) throws -> [[String]] {
        var seen = Set(core)
        return try plugins.map { plugin in
            guard !plugin.name.isEmpty, !plugin.name.contains(":") else {
                throw StoreError(.conflict, "plugin name \"\(plugin.name)\" is empty or contains ':'")
            }
            return try plugin.migrations.map { migration in
                let identifier = "\(plugin.name):\(migration.identifier)"
                guard !migration.identifier.isEmpty, seen.insert(identifier).inserted else {
                    throw StoreError(.conflict, "plugin migration \"\(identifier)\" is empty or declared twice")
                }
                return identifier
            }
        }
    }
}
