import TuisongSQLStore

extension Schema {
    static let v13Identifier = "v13-push-content"

    /// Messages and deliveries keep neutral push content (`PushContent`, JSON) instead of APNs
    /// payload bytes: `messages.content` replaces `notification` and `payload`, and
    /// `deliveries.content` (a policy's own content for that device, else NULL) replaces
    /// `payload`. Every stored payload is read back into content here, the one place the
    /// gateway reads APNs bytes (`contentFromAPNsPayload`), so messages queued or being sent
    /// before the upgrade are sent with what they were accepted with.
    static let v13PushContent = """
        ALTER TABLE messages ADD COLUMN content TEXT NOT NULL DEFAULT '{}';
        UPDATE messages SET content = \(contentFromAPNsPayload("messages.payload"))
            WHERE json_valid(CAST(payload AS TEXT));
        ALTER TABLE messages DROP COLUMN payload;
        ALTER TABLE messages DROP COLUMN notification;
        ALTER TABLE deliveries ADD COLUMN content TEXT;
        UPDATE deliveries SET content = \(contentFromAPNsPayload("deliveries.payload"))
            WHERE payload IS NOT NULL AND json_valid(CAST(payload AS TEXT));
        ALTER TABLE deliveries DROP COLUMN payload;
        """

    /// A scalar subquery turning the APNs payload in `column` into `PushContent`'s stored JSON
    /// (its `CodingKeys`; nulls read as unset).
    static func contentFromAPNsPayload(_ column: String) -> String {
        func text(_ path: String) -> String { "json_extract(p, '$.aps.\(path)')" }
        func json(_ path: String) -> String { "json(json_extract(p, '$.aps.\(path)'))" }
        func flag(_ path: String) -> String {
            "json(CASE WHEN json_extract(p, '$.aps.\(path)') = 1 THEN 'true' ELSE 'false' END)"
        }
        return """
            (SELECT json_object(
                'title', \(text("alert.title")), 'subtitle', \(text("alert.subtitle")),
                'body', CASE json_type(p, '$.aps.alert') WHEN 'text' THEN \(text("alert"))
                    ELSE \(text("alert.body")) END,
                'title_loc_key', \(text("alert.\"title-loc-key\"")),
                'title_loc_args', \(json("alert.\"title-loc-args\"")),
                'subtitle_loc_key', \(text("alert.\"subtitle-loc-key\"")),
                'subtitle_loc_args', \(json("alert.\"subtitle-loc-args\"")),
                'body_loc_key', \(text("alert.\"loc-key\"")), 'body_loc_args', \(json("alert.\"loc-args\"")),
                'badge', \(text("badge")),
                'sound', CASE json_type(p, '$.aps.sound') WHEN 'text' THEN \(text("sound"))
                    ELSE \(text("sound.name")) END,
                'category', \(text("category")), 'thread', \(text("\"thread-id\"")),
                'data', json(json_remove(p, '$.aps')),
                'background', \(flag("\"content-available\"")),
                'apns', json_object(
                    'interruption_level', \(text("\"interruption-level\"")),
                    'relevance_score', \(text("\"relevance-score\"")),
                    'mutable_content', \(flag("\"mutable-content\"")),
                    'target_content_id', \(text("\"target-content-id\"")),
                    'launch_image', \(text("alert.\"launch-image\"")),
                    'action_loc_key', \(text("alert.\"action-loc-key\"")),
                    'alert_as_object', json(CASE json_type(p, '$.aps.alert') WHEN 'object' THEN 'true' ELSE 'false' END),
                    'summary_arg', \(text("alert.\"summary-arg\"")),
                    'summary_arg_count', \(text("alert.\"summary-arg-count\"")),
                    'critical_volume', \(text("sound.volume")),
                    'timestamp', \(text("timestamp")), 'event', \(text("event")),
                    'content_state', \(json("\"content-state\"")), 'stale_date', \(text("\"stale-date\"")),
                    'dismissal_date', \(text("\"dismissal-date\"")),
                    'attributes_type', \(text("\"attributes-type\"")), 'attributes', \(json("attributes"))))
            FROM (SELECT CAST(\(column) AS TEXT) AS p))
            """
    }
}
