/// An HTTP request method, compared by its exact (case-sensitive) token as RFC 9110 requires.
///
///     router.add(.PUT, "/api/v1/devices/{token}") { request in ... }
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public static let GET = HTTPMethod(rawValue: "GET")
    public static let HEAD = HTTPMethod(rawValue: "HEAD")
    public static let POST = HTTPMethod(rawValue: "POST")
    public static let PUT = HTTPMethod(rawValue: "PUT")
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    public static let OPTIONS = HTTPMethod(rawValue: "OPTIONS")

    public var description: String { rawValue }
}
