import TuisongCore

/// The one payload a push carries to every device of a service alike (APNs's JSON), as the
/// console shows a message: its bytes, and why the service would refuse it.
public struct SharedPayload: Sendable, Equatable {
    public var bytes: [UInt8]
    /// What the service would refuse it for (over the push type's limit, not what the push
    /// type allows); nil: it would be sent.
    public var refusal: PayloadError?

    public init(bytes: [UInt8], refusal: PayloadError? = nil) {
        self.bytes = bytes
        self.refusal = refusal
    }
}
