import TuisongHTTP

enum TuisongHTTPRequest {
    static func make(_ target: String, method: HTTPMethod = .POST, body: [UInt8] = []) throws -> Request {
        try Request(method: method, target: target, body: body)
    }
}
