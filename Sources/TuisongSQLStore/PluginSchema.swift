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
