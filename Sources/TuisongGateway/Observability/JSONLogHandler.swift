import Foundation
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What `LoggingSystem.bootstrap` is given: a handler per label in `log.format` (`json`, else
/// swift-log's text stream) at `log.level`, so every logger of the process starts at the
/// configured level: the gateway's, and those made by label alone (each provider's
/// `tuisong.<name>`).
public enum LogHandlers {
    public static func factory(format: String, level: Logger.Level) -> @Sendable (String) -> any LogHandler {
        { label in
            if format == "json" {
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return handler
            }
            // The request id reaches text lines through the provider (JSON lines carry it as
            // their own `request_id` field).
            var handler = StreamLogHandler.standardError(
                label: label, metadataProvider: RequestContext.metadataProvider)
            handler.logLevel = level
            return handler
        }
    }
}

/// `log.format: json`: one JSON object per line on standard error, for log shippers:
///
///     {"label":"tuisong","level":"info","message":"…","metadata":{…},"request_id":"…","time":"2026-11-22T23:00:00.000Z"}
///
/// `request_id` is present on lines written while answering an HTTP request
/// (`RequestContext.requestID`). Lines are written whole under one process-wide lock, so lines
/// from several threads never interleave.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public let label: String
    private let stream: JSONLogStream

    /// Writes to standard error.
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label, stream: .standardError)
    }

    init(label: String, stream: JSONLogStream) {
        self.label = label
        self.stream = stream
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let explicit = event.metadata { merged.merge(explicit) { _, new in new } }
        var object: [String: Any] = [
            "time": Self.timestamp(Date()),
            "level": event.level.rawValue,
            "label": label,
            "message": event.message.description,
        ]
        if !merged.isEmpty { object["metadata"] = merged.mapValues(Self.jsonValue) }
        if let id = RequestContext.requestID { object["request_id"] = id }
        if let error = event.error { object["error"] = "\(error)" }
        stream.write(object)
    }

    static func jsonValue(_ value: Logger.Metadata.Value) -> Any {
        switch value {
        case .string(let s): s
        case .stringConvertible(let c): c.description
        case .array(let items): items.map(jsonValue)
        case .dictionary(let entries): entries.mapValues(jsonValue)
        }
    }

    /// RFC 3339 in UTC with milliseconds.
    static func timestamp(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        let millis = Int((date.timeIntervalSince1970 - Double(seconds)) * 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        return String(
            format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
            Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec), millis)
    }
}

/// Where JSON lines go, one whole line per write.
final class JSONLogStream: Sendable {
    static let standardError = JSONLogStream(descriptor: 2)

    private let descriptor: Int32
    private let lock = Mutex(())

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func write(_ object: [String: Any]) {
        var line: [UInt8]
        if let data = try? JSONSerialization.data(
            withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        {
            line = [UInt8](data)
        } else {
            line = Array(#"{"level":"error","message":"a log line could not be encoded as JSON"}"#.utf8)
        }
        line.append(UInt8(ascii: "\n"))
        lock.withLock { _ in
            line.withUnsafeBytes { bytes in
                var offset = 0
                while offset < bytes.count {
                    let written = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
                    if written < 0 {
                        if errno == EINTR { continue }
                        return
                    }
                    offset += written
                }
            }
        }
    }
}
