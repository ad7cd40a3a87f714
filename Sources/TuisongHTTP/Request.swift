import Foundation
import TuisongCore

/// One HTTP request as the router hands it to a handler: everything is copied out of
/// libmicrohttpd's buffers, so a handler may keep it as long as it likes.
public struct Request: Sendable {
    public let method: HTTPMethod
    /// The percent-decoded path without the query, e.g. `/rest/2.0/channel/channel`, with runs
    /// of `/` written as one (`//rest//2.0` is `/rest/2.0`).
    public let path: String
    /// The request target exactly as received, e.g. `/rest/2.0/channel/channel?x=%2F`.
    public let rawTarget: String
    public let query: QueryParameters
    public let headers: HTTPHeaders
    public let body: [UInt8]
    /// Values of the route's `{param}` segments, percent-decoded (a `%2F` stays inside its
    /// segment, as a `/`).
    public internal(set) var pathParameters: [String: String]
    /// The peer's IP address (`127.0.0.1`, `::1`), when known.
    public let remoteAddress: String?
    /// Whether the request arrived over TLS.
    public let isTLS: Bool
    /// The path split on `/`, empty segments dropped, each segment percent-decoded: what the
    /// router matches against.
    let segments: [String]

    /// Builds a request from a target such as `/a/b?c=d`: what the server does for each
    /// request, offered for testing handlers and routers without a socket. Throws 400 when the
    /// target has a malformed escape or decodes to invalid UTF-8.
    public init(
        method: HTTPMethod, target: String, headers: HTTPHeaders = [], body: [UInt8] = [],
        remoteAddress: String? = nil, isTLS: Bool = false
    ) throws(HTTPError) {
        let parsed = try RequestTarget(parsing: target)
        self.init(
            method: method, rawTarget: target, target: parsed, headers: headers, body: body,
            remoteAddress: remoteAddress, isTLS: isTLS)
    }

    init(
        method: HTTPMethod, rawTarget: String, target: RequestTarget, headers: HTTPHeaders,
        body: [UInt8], remoteAddress: String?, isTLS: Bool
    ) {
        self.method = method
        self.rawTarget = rawTarget
        self.path = target.path
        self.segments = target.segments
        self.query = target.query
        self.headers = headers
        self.body = body
        self.pathParameters = [:]
        self.remoteAddress = remoteAddress
        self.isTLS = isTLS
    }

    /// The media type of the body, lower-cased and without parameters
    /// (`application/json; charset=utf-8` → `application/json`), or nil without `Content-Type`.
    public var contentType: String? {
        guard let value = headers["Content-Type"] else { return nil }
        // Bytes, not Foundation's trimming (1 % of a chat message's CPU): the media type is
        // ASCII, and blanks around it are spaces and tabs (RFC 9110 §5.6.3).
        let bytes = value.utf8.prefix { $0 != UInt8(ascii: ";") }
        func isBlank(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isBlank($0) }),
            let last = bytes.lastIndex(where: { !isBlank($0) })
        else { return nil }
        return String(decoding: bytes[first...last].map { $0 >= 0x41 && $0 <= 0x5A ? $0 | 0x20 : $0 }, as: UTF8.self)
    }

    /// The body as `application/x-www-form-urlencoded` pairs. Throws 415 when the body has
    /// another content type, 400 on a malformed escape or invalid UTF-8. An empty body without
    /// a content type reads as no parameters.
    public func formParameters() throws(HTTPError) -> QueryParameters {
        let type = contentType
        if type == nil && body.isEmpty { return QueryParameters() }
        guard type == "application/x-www-form-urlencoded" else {
            throw .unsupportedMediaType(
                "expected Content-Type application/x-www-form-urlencoded, got \(type ?? "none")")
        }
        return try body.withUnsafeBufferPointer { bytes throws(HTTPError) in
            try QueryParameters(parsing: bytes)
        }
    }

    /// Decodes the JSON body. Throws 415 unless the content type is `application/json` or
    /// `…+json`, 400 with the offending field or position on invalid UTF-8, malformed JSON or a
    /// value of the wrong shape.
    public func decodeJSON<T: Decodable>(_ type: T.Type) throws(HTTPError) -> T {
        try checkJSONBody()
        do {
            return try JSONDecoder().decode(type, from: Data(body))
        } catch let error as DecodingError {
            if case .dataCorrupted(let context) = error, context.codingPath.isEmpty {
                // Not JSON at all ("The given data was not valid JSON."): say where.
                do {
                    _ = try JSONValue(parsing: body)
                } catch let parseError {
                    throw .badRequest("malformed JSON: \(parseError)")
                }
            }
            throw .badRequest(Self.describe(error))
        } catch {
            throw .badRequest("malformed JSON: \(error)")
        }
    }

    /// The JSON body as a dictionary. Same checks as `decodeJSON`; the top level must be an
    /// object.
    public func jsonObject() throws(HTTPError) -> [String: Any] {
        try checkJSONBody()
        let value: Any
        do {
            value = try JSONSerialization.jsonObject(with: Data(body), options: [])
        } catch {
            // Foundation says only "The data is not in the correct format": the project's own
            // parser tells where.
            do {
                _ = try JSONValue(parsing: body)
            } catch let parseError {
                throw .badRequest("malformed JSON: \(parseError)")
            }
            throw .badRequest("malformed JSON: \((error as NSError).localizedDescription)")
        }
        guard let object = value as? [String: Any] else {
            throw .badRequest("the JSON body must be an object")
        }
        return object
    }

    /// The JSON body's members, parsed by `JSONValue(parsing:)` straight into values: the same
    /// checks and errors as `jsonObject()`, without Foundation's objects and the casts that
    /// read them (the two were ~7 % of the CPU of a native chat message).
    public func jsonMembers() throws(HTTPError) -> [String: JSONValue] {
        try checkJSONBody()
        let value: JSONValue
        do {
            value = try JSONValue(parsing: body)
        } catch {
            throw .badRequest("malformed JSON: \(error)")
        }
        guard case .object(let members) = value else {
            throw .badRequest("the JSON body must be an object")
        }
        return members
    }

    private func checkJSONBody() throws(HTTPError) {
        guard let type = contentType, type == "application/json" || type.hasSuffix("+json") else {
            throw .unsupportedMediaType(
                "expected Content-Type application/json, got \(contentType ?? "none")")
        }
        guard !body.isEmpty else { throw .badRequest("the request body is empty; JSON expected") }
        guard isValidUTF8(body) else { throw .badRequest("the request body is not valid UTF-8") }
        if let offset = Self.escapedNUL(in: body) {
            throw .badRequest("invalid JSON at byte \(offset): a string holds \\u0000 (NUL), which is not allowed")
        }
    }

    /// Where the body's JSON spells a NUL character (`\u0000`, the only way JSON text can hold
    /// one): every parser keeps it, and the first C API that reads the string cuts it there
    /// (`"alice\u0000evil"` became the user `alice`). An escape is one when the backslashes
    /// before the `u` are odd in number (`\\u0000` is a backslash and the text `u0000`).
    static func escapedNUL(in body: [UInt8]) -> Int? {
        let pattern: [UInt8] = Array("u0000".utf8)
        var index = 1
        while index + pattern.count <= body.count {
            if body[index] == UInt8(ascii: "u"), body[index - 1] == UInt8(ascii: "\\"),
                body[index..<(index + pattern.count)].elementsEqual(pattern)
            {
                var backslashes = 0
                var before = index - 1
                while before >= 0 && body[before] == UInt8(ascii: "\\") {
                    backslashes += 1
                    before -= 1
                }
                if backslashes % 2 == 1 { return index - 1 }
            }
            index += 1
        }
        return nil
    }

    private static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, appending key: CodingKey? = nil) -> String {
            var keys = context.codingPath
            if let key { keys.append(key) }
            var text = ""
            for key in keys {
                if let index = key.intValue {
                    text += "[\(index)]"
                } else {
                    text += text.isEmpty ? key.stringValue : ".\(key.stringValue)"
                }
            }
            return text.isEmpty ? "the top level" : "field \"\(text)\""
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "\(path(context, appending: key)) is required"
        case .valueNotFound(let type, let context):
            return "\(path(context)) must not be null (expected \(type))"
        case .typeMismatch(let type, let context):
            return "\(path(context)) has the wrong type (expected \(type))"
        case .dataCorrupted(let context):
            if context.codingPath.isEmpty {
                let detail = (context.underlyingError as NSError?)?.localizedDescription
                return "malformed JSON: \(detail ?? context.debugDescription)"
            }
            return "\(path(context)) is invalid: \(context.debugDescription)"
        @unknown default:
            return "malformed JSON: \(error)"
        }
    }
}

/// Whether `bytes` is well-formed UTF-8; skips the validator for plain ASCII.
func isValidUTF8(_ bytes: [UInt8]) -> Bool {
    bytes.withUnsafeBufferPointer { buffer in
        var index = 0
        while index < buffer.count && buffer[index] < 0x80 { index += 1 }
        if index == buffer.count { return true }
        return String(validating: UnsafeBufferPointer(rebasing: buffer[index...]), as: UTF8.self)
            != nil
    }
}

/// A request target split into its decoded path, routing segments and query.
struct RequestTarget: Sendable {
    var path: String
    var segments: [String]
    var query: QueryParameters

    init(path: String, segments: [String], query: QueryParameters) {
        self.path = path
        self.segments = segments
        self.query = query
    }

    /// Accepts origin form (`/a/b?c`) and absolute form (`http://host/a/b?c`).
    init(parsing target: String) throws(HTTPError) {
        self = try withUTF8Bytes(of: target) { bytes throws(HTTPError) in
            try RequestTarget(parsing: bytes)
        }
    }

    init(parsing bytes: UnsafeBufferPointer<UInt8>) throws(HTTPError) {
        var pathStart = 0
        if bytes.first != UInt8(ascii: "/"), let authority = Self.authorityEnd(bytes) {
            pathStart = authority
        }
        var pathEnd = pathStart
        while pathEnd < bytes.count && bytes[pathEnd] != UInt8(ascii: "?")
            && bytes[pathEnd] != UInt8(ascii: "#")
        {
            pathEnd += 1
        }
        var queryEnd = pathEnd
        if pathEnd < bytes.count && bytes[pathEnd] == UInt8(ascii: "?") {
            queryEnd = pathEnd + 1
            while queryEnd < bytes.count && bytes[queryEnd] != UInt8(ascii: "#") { queryEnd += 1 }
            query = try QueryParameters(
                parsing: UnsafeBufferPointer(rebasing: bytes[(pathEnd + 1)..<queryEnd]))
        } else {
            query = QueryParameters()
        }
        let rawPath = UnsafeBufferPointer(rebasing: bytes[pathStart..<pathEnd])
        do {
            path = rawPath.isEmpty ? "/" : try Self.decodeCollapsingSlashes(rawPath)
            segments = []
            var start = 0
            while start < rawPath.count {
                var end = start
                while end < rawPath.count && rawPath[end] != UInt8(ascii: "/") { end += 1 }
                if end > start {
                    segments.append(
                        try percentDecode(
                            UnsafeBufferPointer(rebasing: rawPath[start..<end]), plusAsSpace: false
                        ))
                }
                start = end + 1
            }
        } catch {
            throw .badRequest("request path: \(error.message)")
        }
    }

    /// The decoded path with every run of `/` written as one: `//admin/api/x` is
    /// `/admin/api/x`. Routing already skips empty segments, so the path must agree with it:
    /// the error dialect (`/rest/`, `/admin/api/`...) and every other prefix check read `path`,
    /// and a request routed as `/admin/api/apps` must not be answered as if it were elsewhere.
    private static func decodeCollapsingSlashes(_ rawPath: UnsafeBufferPointer<UInt8>)
        throws(PercentDecodingFailure)
        -> String
    {
        let slash = UInt8(ascii: "/")
        var previousWasSlash = false
        var hasRun = false
        for byte in rawPath {
            if byte == slash && previousWasSlash {
                hasRun = true
                break
            }
            previousWasSlash = byte == slash
        }
        guard hasRun else { return try percentDecode(rawPath, plusAsSpace: false) }
        var collapsed: [UInt8] = []
        collapsed.reserveCapacity(rawPath.count)
        previousWasSlash = false
        for byte in rawPath {
            if byte == slash && previousWasSlash { continue }
            collapsed.append(byte)
            previousWasSlash = byte == slash
        }
        return try collapsed.withUnsafeBufferPointer { bytes throws(PercentDecodingFailure) in
            try percentDecode(bytes, plusAsSpace: false)
        }
    }

    /// For `scheme://authority/path`, the index where the path begins (or the end).
    private static func authorityEnd(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        var index = 0
        while index < bytes.count && bytes[index] != UInt8(ascii: ":") {
            guard bytes[index] != UInt8(ascii: "/") else { return nil }
            index += 1
        }
        guard index + 2 < bytes.count, bytes[index + 1] == UInt8(ascii: "/"),
            bytes[index + 2] == UInt8(ascii: "/")
        else { return nil }
        index += 3
        while index < bytes.count && bytes[index] != UInt8(ascii: "/")
            && bytes[index] != UInt8(ascii: "?")
        {
            index += 1
        }
        return index
    }
}
