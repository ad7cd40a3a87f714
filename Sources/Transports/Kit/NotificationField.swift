import TuisongCore

/// A key of the native API's `notification` object (`mutable_content`) or of its alert object
/// (`alert.launch_image`) that one transport reads into its own entry of the content
/// (`PushContent.services[<name>]`, under `key`), declared by it
/// (`TransportDeclaration.notificationFields`) so the API keeps the key while the gateway names
/// no service. Either a key of that service alone (allowed in the request because a transport
/// declares it), or the service's own reading of a key every service shares, which the API
/// reads too (`alert` given as an object, a critical `sound`'s volume).
public struct NotificationField: Sendable {
    /// Its path under `notification`: `mutable_content`, `alert.launch_image`.
    public var path: String
    /// The key of the service's entry it fills.
    public var key: String
    /// Whether every service takes the key too (the API reads it and checks it first).
    public var isShared: Bool
    /// The entry's value for the request's value (nil: none); throws the sentence the API
    /// answers (`invalid_request`).
    public var read: @Sendable (JSONValue) throws(NotificationFieldError) -> JSONValue?

    public init(
        _ path: String, key: String? = nil, isShared: Bool = false,
        read: @escaping @Sendable (JSONValue) throws(NotificationFieldError) -> JSONValue?
    ) {
        self.path = path
        self.key = key ?? String(path.split(separator: ".").last ?? Substring(path))
        self.isShared = isShared
        self.read = read
    }

    /// Whether it sits in the alert object (`alert.<name>`) rather than in `notification` itself.
    public var inAlert: Bool { path.hasPrefix("alert.") }

    /// Its name in its object: `launch_image` for `alert.launch_image`.
    public var name: String { inAlert ? String(path.dropFirst("alert.".count)) : path }
}

/// Why a declared notification field's value is refused, as the API says it.
public struct NotificationFieldError: Error, Sendable, Equatable {
    public var message: String

    public init(_ message: String) { self.message = message }
}
