import Foundation
import TuisongCore
import TuisongPostgres

// TemplateStore: (app, name) unique, deleted with their app; SQLiteStore+Templates.swift is the
// contract.
extension PostgresStore {
    static let templateColumns = "id, app_id, name, title_pattern, body_pattern"

    private static func template(_ row: PostgresRow) -> PushTemplate {
        PushTemplate(
            id: row[0].int64 ?? 0, appID: row[1].int64 ?? 0, name: row[2].string ?? "",
            titlePattern: row[3].string ?? "", bodyPattern: row[4].string ?? "")
    }

    /// The app's templates by name (code point order, as SQLite's binary collation), then id.
    public func templates(appID: Int64) async throws -> [PushTemplate] {
        try await read { conn in
            try conn.run(
                "SELECT \(Self.templateColumns) FROM templates WHERE app_id = $1 ORDER BY name COLLATE \"C\", id",
                [.int(appID)]
            ).rows.map(Self.template)
        }
    }

    public func template(id: Int64) async throws -> PushTemplate? {
        try await read { conn in
            try conn.run("SELECT \(Self.templateColumns) FROM templates WHERE id = $1", [.int(id)]).rows.first.map(
                Self.template)
        }
    }

    public func template(appID: Int64, name: String) async throws -> PushTemplate? {
        try await read { conn in
            try conn.run(
                "SELECT \(Self.templateColumns) FROM templates WHERE app_id = $1 AND name = $2",
                [.int(appID), .text(name)]
            ).rows.first.map(Self.template)
        }
    }

    /// Throws `.conflict` for a name the app already uses, `.notFound` for an unknown app
    /// (the foreign key).
    public func createTemplate(appID: Int64, name: String, titlePattern: String, bodyPattern: String)
        async throws -> PushTemplate
    {
        try await writeStatement { conn in
            let rows = try conn.run(
                """
                INSERT INTO templates (app_id, name, title_pattern, body_pattern) VALUES ($1, $2, $3, $4)
                RETURNING \(Self.templateColumns)
                """,
                [.int(appID), .text(name), .text(titlePattern), .text(bodyPattern)]
            ).rows
            guard let row = rows.first else {
                throw StoreError(.unavailable, "INSERT INTO templates … RETURNING returned no row")
            }
            return Self.template(row)
        }
    }

    /// Throws `.notFound` for an unknown id, `.conflict` for a name another template of the app has.
    public func updateTemplate(_ template: PushTemplate) async throws {
        try await writeStatement { conn in
            let result = try conn.run(
                "UPDATE templates SET name = $1, title_pattern = $2, body_pattern = $3 WHERE id = $4",
                [.text(template.name), .text(template.titlePattern), .text(template.bodyPattern), .int(template.id)])
            if result.affectedRows == 0 { throw StoreError.notFound("template \(template.id)") }
        }
    }

    public func deleteTemplate(id: Int64) async throws -> Bool {
        try await writeStatement { conn in
            (try conn.run("DELETE FROM templates WHERE id = $1", [.int(id)]).affectedRows ?? 0) > 0
        }
    }
}
