import Foundation
import TuisongCore
import TuisongHTTP

/// Tencent IM's answer envelope: always HTTP 200 (Tencent's SDKs raise on anything else),
/// `{"ActionStatus":"OK"|"FAIL","ErrorCode":int,"ErrorInfo":string,…}`.
enum TencentReply {
    static func ok(_ fields: [String: JSONValue] = [:]) -> Response {
        var object = fields
        object["ActionStatus"] = "OK"
        object["ErrorCode"] = 0
        object["ErrorInfo"] = ""
        return json(object)
    }

    /// A failure, with fields the call answers even when it fails (`ErrorList`, `ResultItem`).
    static func fail(_ error: TencentError, _ fields: [String: JSONValue] = [:]) -> Response {
        var object = fields
        object["ActionStatus"] = "FAIL"
        object["ErrorCode"] = .int(Int64(error.code))
        object["ErrorInfo"] = .string(error.info)
        return json(object)
    }

    /// Renders what the HTTP layer refuses under `/v4/` (404, 405, 413, timeouts) as an
    /// envelope too, still with status 200.
    static let errorResponder: ErrorResponder = { error, request in
        fail(TencentError(httpError: error, path: request.path))
    }

    private static func json(_ object: [String: JSONValue]) -> Response {
        Response(
            status: 200, headers: ["Content-Type": "application/json; charset=utf-8"],
            body: JSONValue.object(object).serialized())
    }
}

extension TencentError {
    /// The app's backlog is at the gateway's bound (`PushGateway.admit`): Tencent's own 60007,
    /// "the REST API call frequency exceeds the limit", in its HTTP 200 envelope (Tencent's SDKs
    /// raise on any other status), with `Retry-After` beside it (`TencentProvider.handle`).
    init(backlogFull error: BacklogFull) {
        self.init(60007, "REST API call frequency exceeds the limit, reduce the request rate: \(error.explanation)")
    }

    /// The store cannot serve (busy, a full disk, no database): Tencent's "timed out, please
    /// retry" with the reason (Tencent answers every error with HTTP 200 and its envelope).
    init(storeUnavailable error: StoreError) {
        self.init(60008, "the service timed out, please retry: \((error.unavailability ?? .busy).explanation)")
    }

    init(httpError: HTTPError, path: String) {
        switch httpError.status {
        case 404, 405: self = .unknownCommand(path)
        case 413: self = .bodyTooLarge
        case 400: self = .init(60002, "HTTP request could not be parsed: \(httpError.message)")
        case 503: self = .init(60008, "the service timed out, please retry: \(httpError.message)")
        default: self = .init(70500, "internal server error (\(httpError.code))")
        }
    }
}

/// The URL parameters every `/v4/` call carries: `sdkappid`, `identifier`, `usersig`,
/// `random`, `contenttype`.
struct TencentCallParameters: Sendable, Hashable {
    var sdkAppID: Int64
    var identifier: String
    var userSig: String

    /// Reads them from the query. `random` is not checked at all (clients reuse it);
    /// `contenttype` may only be `json`. The query is already percent-decoded, so a
    /// percent-encoded usersig arrives the same as a raw one.
    static func parse(_ query: QueryParameters) throws(TencentError) -> TencentCallParameters {
        guard let appText = query["sdkappid"], !appText.isEmpty else { throw .sdkAppIDMissing }
        guard let sdkAppID = TencentKeys.sdkAppID(appText) else { throw .unknownSDKAppID(appText) }
        guard let identifier = query["identifier"], !identifier.isEmpty else { throw .identifierMissing() }
        guard let userSig = query["usersig"], !userSig.isEmpty else { throw .userSigMissing }
        if let type = query["contenttype"], !type.isEmpty, type.lowercased() != "json" {
            throw TencentError(60002, "contenttype must be json, got \(type.prefix(20))")
        }
        return TencentCallParameters(sdkAppID: sdkAppID, identifier: identifier, userSig: userSig)
    }
}

/// The JSON body of a call: UTF-8 with raw non-ASCII, usually without a Content-Type
/// header, sometimes on a GET. An empty body reads as `{}`.
enum TencentBody {
    /// Tencent's limit on a message request.
    static let messageLimit = 8 * 1024

    static func parse(_ body: [UInt8]) throws(TencentError) -> [String: JSONValue] {
        var bytes = body
        // A UTF-8 byte order mark, which some Windows-built clients prepend.
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }
        if bytes.allSatisfy({ [0x20, 0x09, 0x0A, 0x0D].contains($0) }) { return [:] }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw .malformedJSON(error.description)
        }
        guard case .object(let object) = value else { throw .malformedJSON("the body must be a JSON object") }
        return object
    }
}
