import Foundation
import TuisongCore
import TuisongDelivery
import TuisongHTTPClient

extension AndroidContent {
    /// The custom keys as one JSON object (values as strings): FCM's `data`, vivo's
    /// `clientCustomMap`.
    public var dataObject: JSONValue {
        .object(Dictionary(data.map { ($0.key, JSONValue.string($0.value)) }) { $1 })
    }

    /// The custom keys as one JSON object's text, for the services whose data is a string
    /// (Huawei's and Honor's `data`, Xiaomi's `payload`, OPPO's `action_parameters`); nil
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
        out.append(contentsOf: JSONValue.string(string).serialized())
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
