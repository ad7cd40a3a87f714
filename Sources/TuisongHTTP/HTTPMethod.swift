/// An HTTP request method, compared by its exact (case-sensitive) token as RFC 9110 requires.
///
///     router.add(.PUT, "/api/v1/devices/{token}") { request in ... }
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    // The methods keep their RFC 9110 spelling, as they appear on the wire.
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let GET = HTTPMethod(rawValue: "GET")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let HEAD = HTTPMethod(rawValue: "HEAD")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let POST = HTTPMethod(rawValue: "POST")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let PUT = HTTPMethod(rawValue: "PUT")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let DELETE = HTTPMethod(rawValue: "DELETE")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let PATCH = HTTPMethod(rawValue: "PATCH")
    // swift-format-ignore: AlwaysUseLowerCamelCase
    public static let OPTIONS = HTTPMethod(rawValue: "OPTIONS")

    public var description: String { rawValue }
}
