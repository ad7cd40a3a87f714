import Foundation
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

/// What the Android transports read of `PushContent` besides its fields: each renders its
/// service's message from the content directly (title, body and their localisation keys, badge,
/// sound, image, thread, click action, data).
extension PushContent {
    /// No alert (a background, badge-only or data-only push): sent as the service's data
    /// (pass-through) message where it has one.
    public var isDataOnly: Bool { !hasAlert }

    /// The custom keys as one JSON object with string values (a string as it is; anything else
    /// as its JSON text), for a service whose data is a map of strings.
    public var dataObject: JSONValue {
        .object(
            data.mapValues { value in
                if case .string = value { return value }
                return .string(value.serializedString)
            })
    }

    /// Where a tap leads: the content's click action (the one place a message says it), else,
    /// for a message stored before #29, what its Android options said
    /// (`AndroidOptions.legacyClick`).
    public func clickAction(_ headers: PushHeaders) -> ClickAction? { click ?? headers.android?.legacyClick }

    /// The intent URI a tap opens (`clickAction(_:)`'s intent).
    public func intent(_ headers: PushHeaders) -> String? {
        if case .intent(let intent)? = clickAction(headers) { return intent }
        return nil
    }

    /// The web page a tap opens (`clickAction(_:)`'s URL).
    public func url(_ headers: PushHeaders) -> String? {
        if case .url(let url)? = clickAction(headers) { return url }
        return nil
    }

    /// The custom keys as one JSON object's text, for the services whose data is a string
    /// (a `data`, `payload` or `action_parameters` field); nil
    /// without custom keys.
    public var dataText: String? {
        data.isEmpty ? nil : dataObject.serializedString
    }
}

extension PushHeaders {
    /// Whole seconds from `now` to the expiration, within the service's limits; nil without
    /// an expiration.
    public func secondsToLive(now: Date, atLeast minimum: Int64 = 0, atMost maximum: Int64) -> Int64? {
        guard let expiration else { return nil }
        return min(max(minimum, Int64(expiration.timeIntervalSince(now).rounded(.down))), maximum)
    }
}

/// `["a","b",…]` of device tokens, written straight into a request body.
public func appendJSONStrings(_ strings: some Collection<String>, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "["))
    var first = true
    for string in strings {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        JSONValue.writeString(string, into: &out)
    }
    out.append(UInt8(ascii: "]"))
}

extension HTTPClient {
    /// Sends one chunk's request and reads the answer with `read`; a request that got no
    /// answer (connection, timeout) retries every token of the chunk.
    public func execute(
        _ request: HTTPClientRequest, tokens: [String],
        read: @escaping @Sendable (HTTPClientResponse) -> TokenBatchAnswer,
        done: @escaping @Sendable (TokenBatchAnswer) -> Void
    ) {
        execute(request) { result in
            switch result {
            case .failure(let error):
                done(.outcomes(Array(repeating: .retry(.transport(error.code), after: nil), count: tokens.count)))
            case .success(let response):
                done(read(response))
            }
        }
    }
}
