import Foundation
import GRDB
import TuisongCore

// Templates live in the v1 `templates` table: (app, name) unique, deleted with their app.
extension SQLiteStore: TemplateStore {
    private static let templateColumns = "id, app_id, name, title_pattern, body_pattern"

    private static func template(_ row: Row) -> PushTemplate {
        PushTemplate(id: row[0], appID: row[1], name: row[2], titlePattern: row[3], bodyPattern: row[4])
    }

    public func templates(appID: Int64) async throws -> [PushTemplate] {
        try await read { db in
            try Row.fetchAll(
                db, sql: "SELECT \(Self.templateColumns) FROM templates WHERE app_id = ? ORDER BY name, id",
                arguments: [appID]
            ).map(Self.template)
        }
    }

    public func template(id: Int64) async throws -> PushTemplate? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.templateColumns) FROM templates WHERE id = ?", arguments: [id]
            ).map(Self.template)
        }
    }

    public func template(appID: Int64, name: String) async throws -> PushTemplate? {
        try await read { db in
            try Row.fetchOne(
                db, sql: "SELECT \(Self.templateColumns) FROM templates WHERE app_id = ? AND name = ?",
                arguments: [appID, name]
            ).map(Self.template)
        }
    }

    /// Throws `.conflict` for a name the app already uses, `.notFound` for an unknown app
    /// (the foreign key).
    public func createTemplate(appID: Int64, name: String, titlePattern: String, bodyPattern: String)
        async throws -> PushTemplate
    {
        try await write { db in
            guard
                let row = try Row.fetchOne(
                    db,
                    sql: """
                        INSERT INTO templates (app_id, name, title_pattern, body_pattern) VALUES (?, ?, ?, ?)
                        RETURNING \(Self.templateColumns)
                        """,
                    arguments: [appID, name, titlePattern, bodyPattern])
            else {
                throw StoreError(.unavailable, "INSERT INTO templates … RETURNING returned no row")
            }
            return Self.template(row)
        }
    }

    public func updateTemplate(_ template: PushTemplate) async throws {
        try await write { db in
            try db.execute(
                sql: "UPDATE templates SET name = ?, title_pattern = ?, body_pattern = ? WHERE id = ?",
                arguments: [template.name, template.titlePattern, template.bodyPattern, template.id])
            if db.changesCount == 0 { throw StoreError.notFound("template \(template.id)") }
        }
    }

    public func deleteTemplate(id: Int64) async throws -> Bool {
        try await write { db in
            try db.execute(sql: "DELETE FROM templates WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }
}
