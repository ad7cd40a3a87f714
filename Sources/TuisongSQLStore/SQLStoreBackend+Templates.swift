import Foundation
import TuisongCore

// TemplateStore, written once: (app, name) unique, deleted with their app.
extension SQLStoreBackend {
    /// The app's templates by name (code point order on both databases), then id.
    public func templates(appID: Int64) async throws -> [PushTemplate] {
        try await sqlRead { db in
            try db.fetchAll(
                """
                SELECT \(raw: Rows.templateColumns) FROM templates WHERE app_id = \(appID)
                ORDER BY name\(raw: db.dialect.binaryCollation), id
                """
            ).map(Rows.template)
        }
    }

    public func template(id: Int64) async throws -> PushTemplate? {
        try await sqlRead { db in
            try db.fetchOne("SELECT \(raw: Rows.templateColumns) FROM templates WHERE id = \(id)").map(Rows.template)
        }
    }

    public func template(appID: Int64, name: String) async throws -> PushTemplate? {
        try await sqlRead { db in
            try db.fetchOne(
                "SELECT \(raw: Rows.templateColumns) FROM templates WHERE app_id = \(appID) AND name = \(name)"
            ).map(Rows.template)
        }
    }

    /// Throws `.conflict` for a name the app already uses, `.notFound` for an unknown app
    /// (the foreign key).
    public func createTemplate(appID: Int64, name: String, titlePattern: String, bodyPattern: String)
        async throws -> PushTemplate
    {
        try await sqlWriteStatement { db in
            Rows.template(
                try Rows.returned(
                    db,
                    """
                    INSERT INTO templates (app_id, name, title_pattern, body_pattern)
                    VALUES (\(appID), \(name), \(titlePattern), \(bodyPattern))
                    RETURNING \(raw: Rows.templateColumns)
                    """, "INSERT INTO templates"))
        }
    }

    /// Throws `.notFound` for an unknown id, `.conflict` for a name another template of the app has.
    public func updateTemplate(_ template: PushTemplate) async throws {
        try await sqlWriteStatement { db in
            let changed = try db.run(
                """
                UPDATE templates SET name = \(template.name), title_pattern = \(template.titlePattern),
                    body_pattern = \(template.bodyPattern)
                WHERE id = \(template.id)
                """)
            if changed == 0 { throw StoreError.notFound("template \(template.id)") }
        }
    }

    public func deleteTemplate(id: Int64) async throws -> Bool {
        try await sqlWriteStatement { db in try db.run("DELETE FROM templates WHERE id = \(id)") > 0 }
    }
}

extension Rows {
    package static let templateColumns = "id, app_id, name, title_pattern, body_pattern"

    package static func template(_ row: SQLRow) -> PushTemplate {
        PushTemplate(
            id: row.int64(0), appID: row.int64(1), name: row.string(2), titlePattern: row.string(3),
            bodyPattern: row.string(4))
    }
}
