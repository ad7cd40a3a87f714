import Foundation
import TuisongPluginTestKit

/// One request over a real loopback socket with exactly the bytes a Tencent client sends: any
/// method with a body (account_check is a GET with a JSON body), `Content-Length` always, no
/// Content-Type unless asked, the target as given (raw or percent-encoded usersig).
func rawHTTP(
    port: Int, method: String, target: String, body: [UInt8], headers: [String: String] = [:]
) async throws -> TestResponse {
    let fields =
        [("Host", "127.0.0.1:\(port)"), ("Connection", "close"), ("Content-Length", "\(body.count)")]
        + headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    return try await TestClient(port: port).execute(method, target, headers: fields, body: body)
}

/// Tencent's envelope on any answer.
extension TestResponse {
    var actionStatus: String? { jsonObject["ActionStatus"] as? String }
    var errorCode: Int? { jsonObject["ErrorCode"] as? Int }
}
