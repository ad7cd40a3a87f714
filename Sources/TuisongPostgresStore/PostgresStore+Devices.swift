import Foundation
import TuisongCore
import TuisongPostgres
import TuisongSQLStore

// The device queries PostgreSQL writes by hand (the rest is written once,
// `SQLStoreBackend+Devices`): registering (an upsert that says whether it inserted, `xmax`),
// bulk import by COPY.
extension PostgresStore {
    /// The upsert of one registration. Nil user, locale and selector leave the stored ones; the
    /// registration clears any invalidation. The last column, `created`, says whether the row
    /// was inserted (`xmax` is 0 only for a row this statement inserted, not one it updated).
    static func upsertDevice(appID: Int64, _ registration: DeviceRegistration, now: Int64) -> SQLQuery {
        """
        INSERT INTO devices (\(raw: Rows.deviceInsertColumns))
        VALUES (\(appID), \(registration.token.value), \(registration.environment.rawValue), \(registration.user),
            \(registration.locale), \(now), \(now), \(registration.credentialSelector), \(registration.channel.rawValue))
        \(raw: Rows.deviceUpsertConflict)
        RETURNING \(raw: deviceColumns), (xmax = 0) AS created
        """
    }

    /// Registers or updates the device (app, token) and returns it with `created`.
    ///
    /// One statement, `INSERT … ON CONFLICT DO UPDATE`: registering the same token from many
    /// tasks (or nodes) at once yields one row, created once; the last registration applied
    /// wins. With tags, the upsert and the replacement of the device's tag set go in one
    /// pipelined round trip that is one transaction.
    ///
    /// Throws `.notFound` when the app does not exist.
    public func registerDevice(appID: Int64, _ registration: DeviceRegistration) async throws -> (
        device: Device, created: Bool
    ) {
        let upsert = Self.upsertDevice(appID: appID, registration, now: nowMilliseconds)
        guard let tags = registration.tags else {
            return try await writeStatement { conn in try Self.registered(conn.run(upsert)) }
        }
        let names = PostgresArrayLiteral.texts(tags.map(\.value))
        let statements = ([upsert] + Self.retagStatements(appID: appID, token: registration.token.value, names: names))
            .map(\.postgresStatement)
        return try await writeStatement { conn in
            let results = conn.pipeline(statements, atomic: true)
            // The first failure is the cause; the statements after it report that they did not run.
            for result in results { if case .failure(let error) = result { throw error } }
            return try Self.registered(results[0].get())
        }
    }

    /// The same upsert and tag replacement as `registerDevice`, inside a write of the shared
    /// queries (`bindDevice`): one statement after another on the write's connection.
    public func sqlRegister(_ executor: any SQLExecutor, appID: Int64, _ registration: DeviceRegistration, now: Int64)
        throws -> Int64
    {
        guard let postgres = executor as? PostgresExecutor else {
            throw StoreError(.unavailable, "a registration was handed another store's executor")
        }
        let conn = postgres.conn
        let device = try Self.registered(conn.run(Self.upsertDevice(appID: appID, registration, now: now))).device
        if let tags = registration.tags {
            let names = PostgresArrayLiteral.texts(tags.map(\.value))
            for statement in Self.retagStatements(appID: appID, token: registration.token.value, names: names) {
                try conn.run(statement)
            }
        }
        return device.id
    }

    /// Replacing the tag set of the device (app, token) by the names in `names` (a text array
    /// literal): its memberships go, missing tags are created (in name order, so concurrent
    /// registrations take the tags' locks in one order), the new memberships come.
    static func retagStatements(appID: Int64, token: String, names: String) -> [SQLQuery] {
        [
            "DELETE FROM device_tags WHERE device_id = (SELECT id FROM devices WHERE app_id = \(appID) AND token = \(token))",
            """
            INSERT INTO tags (app_id, name)
            SELECT \(appID), name FROM (SELECT DISTINCT unnest(\(names)::text[]) AS name) wanted
            ORDER BY name COLLATE "C"
            ON CONFLICT (app_id, name) DO NOTHING
            """,
            """
            INSERT INTO device_tags (tag_id, device_id)
            SELECT t.id, d.id FROM devices d JOIN tags t ON t.app_id = d.app_id
            WHERE d.app_id = \(appID) AND d.token = \(token) AND t.name = ANY(\(names)::text[])
            ON CONFLICT DO NOTHING
            """,
        ]
    }

    static func registered(_ result: PostgresResult) throws -> (device: Device, created: Bool) {
        guard let row = result.rows.first else {
            throw StoreError(.unavailable, "the device upsert returned no row")
        }
        return (try device(row), row[deviceColumnCount].bool ?? false)
    }

    /// Registers many devices in one transaction, for imports and seeding: either all of
    /// them are stored or, on an error, none. Same semantics per device as
    /// `registerDevice(appID:_:)`; a token repeated in `registrations` is applied in order.
    ///
    /// The batch goes in with COPY into a temporary table, then one `INSERT … SELECT … ON
    /// CONFLICT` merges it into `devices` and a few set statements replace the tag sets.
    ///
    /// - Returns: how many devices were created (the others already existed and were updated).
    public func registerDevices(appID: Int64, _ registrations: [DeviceRegistration]) async throws -> Int {
        try await importDevices(appID: appID, registrations).created
    }

    /// `registerDevices`, also saying how many rows the COPY took in (tests check the batch
    /// went through COPY).
    func importDevices(appID: Int64, _ registrations: [DeviceRegistration]) async throws -> (
        created: Int, copied: Int
    ) {
        guard !registrations.isEmpty else { return (0, 0) }
        let now = nowMilliseconds
        return try await write { conn in
            try conn.execute(
                """
                CREATE TEMPORARY TABLE device_import (
                    ord BIGINT NOT NULL, token TEXT NOT NULL, environment TEXT NOT NULL, "user" TEXT, locale TEXT,
                    credential_selector TEXT, channel TEXT NOT NULL, tags TEXT
                ) ON COMMIT DROP;
                CREATE TEMPORARY TABLE device_import_result (
                    id BIGINT NOT NULL, created BOOLEAN NOT NULL, tags TEXT[]
                ) ON COMMIT DROP
                """)
            let rows = registrations.enumerated().lazy.map { ord, registration -> [String?] in
                [
                    String(ord), registration.token.value, registration.environment.rawValue, registration.user,
                    registration.locale, registration.credentialSelector, registration.channel.rawValue,
                    registration.tags.map { PostgresArrayLiteral.texts($0.map(\.value)) },
                ]
            }
            let copied = try conn.copyIn(
                sql: """
                    COPY device_import (ord, token, environment, "user", locale, credential_selector, channel, tags)
                    FROM STDIN
                    """,
                rows: rows)
            // One row per token, as applying the batch in order would leave it: the last
            // environment and channel, the last non-null user, locale, selector and tag set;
            // new devices get their ids in the order of their first registration.
            try conn.runUnprepared(
                """
                WITH merged AS (
                    SELECT token, min(ord) AS ord,
                        (array_agg(environment ORDER BY ord DESC))[1] AS environment,
                        (array_agg(channel ORDER BY ord DESC))[1] AS channel,
                        (array_agg("user" ORDER BY ord DESC) FILTER (WHERE "user" IS NOT NULL))[1] AS "user",
                        (array_agg(locale ORDER BY ord DESC) FILTER (WHERE locale IS NOT NULL))[1] AS locale,
                        (array_agg(credential_selector ORDER BY ord DESC)
                            FILTER (WHERE credential_selector IS NOT NULL))[1] AS credential_selector,
                        (array_agg(tags ORDER BY ord DESC) FILTER (WHERE tags IS NOT NULL))[1] AS tags
                    FROM device_import GROUP BY token
                ),
                upserted AS (
                    INSERT INTO devices (\(raw: Rows.deviceInsertColumns))
                    SELECT \(appID), token, environment, "user", locale, \(now), \(now), credential_selector, channel
                    FROM merged ORDER BY ord
                    \(raw: Rows.deviceUpsertConflict)
                    RETURNING id, token, (xmax = 0) AS created
                )
                INSERT INTO device_import_result (id, created, tags)
                SELECT u.id, u.created, m.tags::text[] FROM upserted u JOIN merged m USING (token)
                """)
            try conn.execute(
                """
                DELETE FROM device_tags dt USING device_import_result r
                WHERE dt.device_id = r.id AND NOT r.created AND r.tags IS NOT NULL
                """)
            try conn.runUnprepared(
                """
                INSERT INTO tags (app_id, name)
                SELECT \(appID), name FROM (SELECT DISTINCT unnest(tags) AS name FROM device_import_result) wanted
                ORDER BY name COLLATE "C"
                ON CONFLICT (app_id, name) DO NOTHING
                """)
            try conn.runUnprepared(
                """
                INSERT INTO device_tags (tag_id, device_id)
                SELECT t.id, r.id FROM device_import_result r
                CROSS JOIN LATERAL unnest(r.tags) AS wanted(name)
                JOIN tags t ON t.app_id = \(appID) AND t.name = wanted.name
                ON CONFLICT DO NOTHING
                """)
            let created = try conn.execute("SELECT count(*) FROM device_import_result WHERE created").rows.first?[0].int
            return (created ?? 0, copied)
        }
    }
}
