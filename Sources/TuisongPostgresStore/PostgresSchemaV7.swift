extension PostgresSchema {
    /// SQLite's `v13-push-content`: messages and deliveries keep `PushContent` JSON instead of
    /// APNs payload bytes; every stored payload is read back into content here (the one place
    /// APNs bytes are read), so messages queued or being sent before the upgrade keep what they
    /// were accepted with.
    static let pushContent = """
        ALTER TABLE messages ADD COLUMN content TEXT NOT NULL DEFAULT '{}';
        UPDATE messages SET content = \(contentFromAPNsPayload("messages.payload"));
        ALTER TABLE messages DROP COLUMN payload;
        ALTER TABLE messages DROP COLUMN notification;
        ALTER TABLE deliveries ADD COLUMN content TEXT;
        UPDATE deliveries SET content = \(contentFromAPNsPayload("deliveries.payload")) WHERE payload IS NOT NULL;
        ALTER TABLE deliveries DROP COLUMN payload;
        """

    /// A scalar subquery turning the APNs payload (`BYTEA`) in `column` into `PushContent`'s
    /// stored JSON (its `CodingKeys`; nulls read as unset).
    static func contentFromAPNsPayload(_ column: String) -> String {
        func value(_ path: String) -> String {
            "(p #> '{aps,\(path)}')"
        }
        func flag(_ path: String) -> String {
            "to_jsonb(COALESCE((p #>> '{aps,\(path)}') = '1', false))"
        }
        return """
            (SELECT jsonb_build_object(
                'title', \(value("alert,title")), 'subtitle', \(value("alert,subtitle")),
                'body', CASE jsonb_typeof(p #> '{aps,alert}') WHEN 'string' THEN \(value("alert"))
                    ELSE \(value("alert,body")) END,
                'title_loc_key', \(value("alert,title-loc-key")), 'title_loc_args', \(value("alert,title-loc-args")),
                'subtitle_loc_key', \(value("alert,subtitle-loc-key")),
                'subtitle_loc_args', \(value("alert,subtitle-loc-args")),
                'body_loc_key', \(value("alert,loc-key")), 'body_loc_args', \(value("alert,loc-args")),
                'badge', \(value("badge")),
                'sound', CASE jsonb_typeof(p #> '{aps,sound}') WHEN 'string' THEN \(value("sound"))
                    ELSE \(value("sound,name")) END,
                'category', \(value("category")), 'thread', \(value("thread-id")),
                'data', p - 'aps',
                'background', \(flag("content-available")),
                'apns', jsonb_build_object(
                    'interruption_level', \(value("interruption-level")),
                    'relevance_score', \(value("relevance-score")),
                    'mutable_content', \(flag("mutable-content")),
                    'target_content_id', \(value("target-content-id")),
                    'launch_image', \(value("alert,launch-image")),
                    'action_loc_key', \(value("alert,action-loc-key")),
                    'alert_as_object', to_jsonb(COALESCE(jsonb_typeof(p #> '{aps,alert}') = 'object', false)),
                    'summary_arg', \(value("alert,summary-arg")),
                    'summary_arg_count', \(value("alert,summary-arg-count")),
                    'critical_volume', \(value("sound,volume")),
                    'timestamp', \(value("timestamp")), 'event', \(value("event")),
                    'content_state', \(value("content-state")), 'stale_date', \(value("stale-date")),
                    'dismissal_date', \(value("dismissal-date")),
                    'attributes_type', \(value("attributes-type")), 'attributes', \(value("attributes")))
            )::text
            FROM (SELECT convert_from(\(column), 'UTF8')::jsonb AS p) AS payload)
            """
    }
}
