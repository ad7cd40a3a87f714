import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Files under one root folder, served for GET and HEAD requests that match no route.
///
/// - `/` and any directory serve their `index.html`.
/// - Every answer carries `ETag` (size and modification time), `Last-Modified` and
///   `Cache-Control: no-cache`; `If-None-Match` / `If-Modified-Since` answer 304.
/// - Nothing outside the root is reachable: `.`/`..` segments, segments that decode to `/` or
///   NUL, hidden (dot) files and symlinks whose real path leaves the root all answer 404.
/// - Contents are read off the server thread; files up to 512 KiB stay cached in memory while
///   their size and modification time are unchanged.
public final class StaticFiles: Sendable {
    /// The root folder's real path (symlinks resolved).
    public let root: String
    private let cache = Mutex(FileCache())

    static let cacheableFileSize = 512 * 1024
    static let cacheBudget = 32 * 1024 * 1024

    /// Throws when `root` does not exist or is not a directory.
    public init(root: String) throws {
        guard let resolved = realpath(root, nil) else {
            throw HTTPServerError.system("static files root \(root)")
        }
        defer { free(resolved) }
        let path = String(cString: resolved)
        var info = stat()
        guard stat(path, &info) == 0 else {
            throw HTTPServerError.system("static files root \(root)")
        }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            throw HTTPServerError.system("static files root \(root)", errno: ENOTDIR)
        }
        self.root = path
    }

    func serve(_ request: Request) async throws(HTTPError) -> Response {
        var relative = ""
        for segment in request.segments {
            guard Self.isSafe(segment) else { throw .notFound() }
            relative += "/" + segment
        }
        guard let file = open(relativePath: relative) else { throw .notFound() }
        let validators = Validators(file.info)
        var headers: HTTPHeaders = [
            "ETag": validators.etag,
            "Last-Modified": validators.lastModified,
            "Cache-Control": "no-cache",
        ]
        if validators.matches(request.headers) {
            Glibc.close(file.descriptor)
            return Response(status: 304, headers: headers)
        }
        headers.add(name: "Content-Type", value: Self.contentType(forPath: file.path))
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        // The console must not be framed by another site (clickjacking); a <meta> CSP cannot
        // say frame-ancestors, so the header does, with X-Frame-Options for older browsers.
        headers.add(name: "X-Frame-Options", value: "DENY")
        headers.add(name: "Content-Security-Policy", value: "frame-ancestors 'none'")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        let body: [UInt8]
        if let cached = cache.withLock({ $0.lookup(file.path, validators: validators) }) {
            Glibc.close(file.descriptor)
            body = cached
        } else {
            guard
                let contents = await Self.readAndClose(
                    file.descriptor, size: Int(file.info.st_size))
            else { throw .notFound() }
            if contents.count <= Self.cacheableFileSize {
                cache.withLock { $0.store(file.path, validators: validators, body: contents) }
            }
            body = contents
        }
        return Response(status: 200, headers: headers, body: body)
    }

    private struct OpenFile {
        let path: String
        let descriptor: Int32
        let info: stat
    }

    /// Resolves `relative` under the root (a directory means its `index.html`) and opens it,
    /// or nil when it does not exist, is not a regular file or resolves outside the root.
    private func open(relativePath relative: String) -> OpenFile? {
        guard var path = resolveInsideRoot(root + relative) else { return nil }
        var descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            Glibc.close(descriptor)
            return nil
        }
        if info.st_mode & S_IFMT == S_IFDIR {
            Glibc.close(descriptor)
            guard let index = resolveInsideRoot(path + "/index.html") else { return nil }
            path = index
            descriptor = Glibc.open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { return nil }
            guard fstat(descriptor, &info) == 0 else {
                Glibc.close(descriptor)
                return nil
            }
        }
        guard info.st_mode & S_IFMT == S_IFREG else {
            Glibc.close(descriptor)
            return nil
        }
        return OpenFile(path: path, descriptor: descriptor, info: info)
    }

    /// The real path of `path` if it is the root or inside it.
    private func resolveInsideRoot(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        let real = String(cString: resolved)
        guard real == root || real.hasPrefix(root == "/" ? "/" : root + "/") else { return nil }
        return real
    }

    private static func isSafe(_ segment: String) -> Bool {
        !segment.isEmpty && !segment.hasPrefix(".")
            && !segment.utf8.contains {
                $0 == UInt8(ascii: "/") || $0 == 0 || $0 == UInt8(ascii: "\\")
            }
    }

    /// Reads the whole file on the global executor, never on the server thread.
    @concurrent
    private static func readAndClose(_ descriptor: Int32, size: Int) async -> [UInt8]? {
        defer { Glibc.close(descriptor) }
        var contents = [UInt8](repeating: 0, count: size)
        var offset = 0
        while offset < size {
            let count = contents.withUnsafeMutableBytes { buffer in
                pread(descriptor, buffer.baseAddress! + offset, size - offset, off_t(offset))
            }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { break }
            offset += count
        }
        // The file shrank while we read it: serve what it now holds.
        if offset < size { contents.removeSubrange(offset...) }
        return contents
    }

    static func contentType(forPath path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        guard let dot = name.lastIndex(of: ".") else { return "application/octet-stream" }
        switch name[name.index(after: dot)...].lowercased() {
        case "html", "htm": return "text/html; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "json", "map": return "application/json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "gif": return "image/gif"
        case "webp": return "image/webp"
        case "ico": return "image/x-icon"
        case "woff2": return "font/woff2"
        case "woff": return "font/woff"
        case "txt": return "text/plain; charset=utf-8"
        case "xml": return "application/xml"
        case "wasm": return "application/wasm"
        case "webmanifest": return "application/manifest+json"
        default: return "application/octet-stream"
        }
    }
}

/// The cache validators of one file version.
struct Validators: Equatable {
    let size: Int
    let modifiedSeconds: Int
    let modifiedNanoseconds: Int
    let inode: UInt64

    init(_ info: stat) {
        size = Int(info.st_size)
        modifiedSeconds = Int(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
        inode = UInt64(info.st_ino)
    }

    var etag: String {
        let size = String(self.size, radix: 16)
        let seconds = String(modifiedSeconds, radix: 16)
        let nanoseconds = String(modifiedNanoseconds, radix: 16)
        return "\"\(size)-\(seconds).\(nanoseconds)\""
    }

    var lastModified: String { HTTPDate.format(modifiedSeconds) }

    /// Whether the client's copy is current. `If-None-Match` wins over `If-Modified-Since`
    /// (RFC 9110 §13.2.2).
    func matches(_ headers: HTTPHeaders) -> Bool {
        if let ifNoneMatch = headers["If-None-Match"] {
            let current = etag
            return ifNoneMatch.split(separator: ",").contains { candidate in
                var tag = candidate.trimmingWhitespace()
                if tag == "*" { return true }
                if tag.hasPrefix("W/") { tag = tag.dropFirst(2) }
                return tag == current
            }
        }
        if let ifModifiedSince = headers["If-Modified-Since"],
            let since = HTTPDate.parse(ifModifiedSince)
        {
            return modifiedSeconds <= since
        }
        return false
    }
}

/// Small-file contents keyed by real path; an entry is used only while the file's validators
/// are unchanged.
struct FileCache {
    private var entries: [String: (validators: Validators, body: [UInt8])] = [:]
    private var totalBytes = 0

    func lookup(_ path: String, validators: Validators) -> [UInt8]? {
        guard let entry = entries[path], entry.validators == validators else { return nil }
        return entry.body
    }

    mutating func store(_ path: String, validators: Validators, body: [UInt8]) {
        if totalBytes + body.count > StaticFiles.cacheBudget {
            entries.removeAll()
            totalBytes = 0
        }
        if let old = entries.updateValue((validators, body), forKey: path) {
            totalBytes -= old.body.count
        }
        totalBytes += body.count
    }
}

/// IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the only date format HTTP senders use today.
enum HTTPDate {
    private static let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    static func format(_ seconds: Int) -> String {
        var time = time_t(seconds)
        var parts = tm()
        gmtime_r(&time, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(days[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) "
            + "\(parts.tm_year + 1900) \(two(parts.tm_hour)):\(two(parts.tm_min))"
            + ":\(two(parts.tm_sec)) GMT"
    }

    /// Seconds since the epoch, or nil when `text` is not an IMF-fixdate.
    static func parse(_ text: String) -> Int? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT", let day = Int32(fields[1]),
            let month = months.firstIndex(of: String(fields[2])), let year = Int32(fields[3])
        else { return nil }
        let clock = fields[4].split(separator: ":")
        guard clock.count == 3, let hour = Int32(clock[0]), let minute = Int32(clock[1]),
            let second = Int32(clock[2])
        else { return nil }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = Int32(month)
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        return Int(timegm(&parts))
    }
}

extension Substring {
    func trimmingWhitespace() -> Substring {
        var result = self
        while let first = result.first, first == " " || first == "\t" {
            result = result.dropFirst()
        }
        while let last = result.last, last == " " || last == "\t" { result = result.dropLast() }
        return result
    }
}
