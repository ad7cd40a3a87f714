import TuisongCore

/// What a plugin's `SharedDatabase` call throws, on either backend: the database's own errors
/// (`Failure`: GRDB's `DatabaseError`, libpq's `PostgresError`) as `StoreError` (a constraint →
/// `.conflict`), what plugins already handle for the rest of the store; an error the plugin's
/// closure throws itself passes through unchanged.
package enum PluginDatabaseErrors {
    package static func mapping<Failure: Error, T: Sendable>(
        _ failure: Failure.Type, by storeError: (Failure) -> any Error, _ work: () async throws -> T
    ) async throws -> T {
        do {
            return try await work()
        } catch let error as Failure {
            throw storeError(error)
        }
    }
}
