#if canImport(Glibc)
    import Glibc
#endif

/// Why the server (or its static file root) could not be set up, with the operating system's
/// or libmicrohttpd's own words.
///
///     // bind 127.0.0.1:8080: Address already in use (errno 98)
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// What was being done, e.g. `bind 127.0.0.1:8080`.
    public let operation: String
    /// The `errno` of the failing system call, when there was one.
    public let errno: Int32?
    /// `strerror(errno)` or libmicrohttpd's log line.
    public let message: String

    init(operation: String, errno: Int32?, message: String) {
        self.operation = operation
        self.errno = errno
        self.message = message
    }

    /// From the current `errno`, to be called right after the failing system call.
    static func system(_ operation: String, errno code: Int32 = Glibc.errno) -> HTTPServerError {
        HTTPServerError(operation: operation, errno: code, message: String(cString: strerror(code)))
    }

    public var description: String {
        if let errno { return "\(operation): \(message) (errno \(errno))" }
        return "\(operation): \(message)"
    }
}
