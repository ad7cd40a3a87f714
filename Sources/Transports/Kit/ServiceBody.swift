import Foundation
import TuisongCore
import TuisongDelivery

/// What a push is rendered from for people to read: the console's message page and its
/// test-push preview show each service's own body, made by the transport's own rendering.
public struct ServiceBodyRequest: Sendable {
    public var content: PushContent
    public var headers: PushHeaders
    public var environment: PushEnvironment
    /// The app's name: the title a service that needs one gets when the content has none.
    public var appName: String
    /// The token written where the device's goes (the chosen device's, or a placeholder).
    public var token: String
    /// The app's credential for the service without its secret (ids, options such as a badge
    /// class), or a placeholder when it has none yet.
    public var credential: ChannelCredential
    public var now: Date

    public init(
        content: PushContent, headers: PushHeaders, environment: PushEnvironment, appName: String, token: String,
        credential: ChannelCredential, now: Date
    ) {
        self.content = content
        self.headers = headers
        self.environment = environment
        self.appName = appName
        self.token = token
        self.credential = credential
        self.now = now
    }
}

/// One service's request body for one device, as that service's transport would send it, or
/// why it sends none (a background push to a service without pass-through messages).
public struct ServiceBody: Sendable, Equatable {
    /// How the body travels: a JSON document, or form fields (a form-encoded request).
    public enum Encoding: String, Sendable {
        case json
        case form
    }

    public var encoding: Encoding
    /// The body; nil when the push is skipped for this service (`skipReason`).
    public var body: JSONValue?
    /// The bytes the service would be sent (the JSON's, the encoded form's).
    public var bytes: Int
    /// Why this service would get nothing: `unsupported_content`, `payload_too_large`, or the
    /// payload's own error (`notification_too_large`).
    public var skipReason: String?

    public init(encoding: Encoding, body: JSONValue?, bytes: Int, skipReason: String? = nil) {
        self.encoding = encoding
        self.body = body
        self.bytes = bytes
        self.skipReason = skipReason
    }

    public static func json(_ bytes: [UInt8]) -> ServiceBody {
        ServiceBody(encoding: .json, body: try? JSONValue(parsing: bytes), bytes: bytes.count)
    }

    public static func skipped(_ reason: SendReason) -> ServiceBody {
        ServiceBody(encoding: .json, body: nil, bytes: 0, skipReason: reason.description)
    }
}

extension TokenBatchService {
    /// The body one device's request carries, written with the service's own template (the one
    /// `TokenBatchTransport` sends), with the same skips: content only a data message could
    /// carry to a service without one, a body over the service's limit.
    public func serviceBody(_ request: ServiceBodyRequest) -> ServiceBody {
        var content = request.content
        let badgeOnly = content.data.isEmpty && content.badge != nil && carriesBadgeOnly
        if content.isDataOnly, !badgeOnly, !carriesDataMessages || content.data.isEmpty {
            return .skipped(.unsupportedContent)
        }
        if !content.isDataOnly, content.title == nil { content.title = request.appName }
        let template = template(
            content: content, headers: request.headers, environment: request.environment,
            credential: request.credential, now: request.now)
        var body = readableBody(template, token: request.token)
        if exceedsServiceLimit(template) { body.skipReason = SendReason.payloadTooLarge.description }
        return body
    }
}

extension JSONBatchService {
    /// A JSON-batch service's: the JSON body with the one token.
    public func readableBody(_ template: Template, token: String) -> ServiceBody {
        .json(body(template, tokens: [token]))
    }
}
