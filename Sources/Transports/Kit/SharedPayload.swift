import TuisongCore

/// The one payload a push carries to every device of a service alike (the transport that
/// declares `sharedPayload` renders it), as the console shows a message: its bytes, the
/// service's limit for the push type, and why the service would refuse it.
public struct SharedPayload: Sendable, Equatable {
    public var bytes: [UInt8]
    /// What the service would refuse it for (over the push type's limit, not what the push
    /// type allows); nil: it would be sent.
    public var refusal: PayloadError?
    /// The largest payload the service takes for the push type, in bytes.
    public var limit: Int

    public init(bytes: [UInt8], limit: Int, refusal: PayloadError? = nil) {
        self.bytes = bytes
        self.limit = limit
        self.refusal = refusal
    }
}
