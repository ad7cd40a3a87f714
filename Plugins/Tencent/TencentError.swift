import TuisongHTTP

/// A failed call in Tencent IM's words: the `ErrorCode` and `ErrorInfo` of a `FAIL` envelope.
/// Codes are Tencent's own (REST API and group error tables), so an app server's existing
/// error handling keeps working.
public struct TencentError: Error, Sendable, Hashable, CustomStringConvertible {
    public var code: Int
    public var info: String

    public init(_ code: Int, _ info: String) {
        self.code = code
        self.info = info
    }

    public var description: String { "\(code): \(info)" }

    // MARK: UserSig (the 70001–70020 family of Tencent's account errors)

    /// 70001: `TLS.time + TLS.expire` has passed.
    static func userSigExpired(_ detail: String) -> TencentError { .init(70001, "UserSig expired: \(detail)") }
    /// 70002: the `usersig` parameter is empty.
    static let userSigMissing = TencentError(70002, "usersig is empty")
    /// 70003: not base64 / zlib / JSON, or a field is missing (e.g. a truncated sig).
    static func userSigMalformed(_ detail: String) -> TencentError { .init(70003, "UserSig is invalid: \(detail)") }
    /// 70009: the HMAC does not verify under the app's key.
    static let userSigBadSignature = TencentError(
        70009, "UserSig verification failed: it was not signed with this SDKAppID's key")
    /// 70013: signed for another identifier.
    static func userSigIdentifierMismatch(_ signed: String, _ requested: String) -> TencentError {
        .init(70013, "UserSig was issued to identifier \(signed), not \(requested)")
    }
    /// 70014: signed for another SDKAppID.
    static func userSigAppMismatch(_ signed: Int64, _ requested: Int64) -> TencentError {
        .init(70014, "UserSig was issued for SDKAppID \(signed), not \(requested)")
    }

    // MARK: REST framework (600xx)

    static func identifierMissing() -> TencentError {
        .init(60004, "identifier is missing from the URL (account or signature error)")
    }
    static func unknownSDKAppID(_ value: String) -> TencentError {
        .init(60006, "SDKAppID \(value.prefix(20)) is not valid on this server")
    }
    static let needsAdmin = TencentError(60010, "this call needs the app administrator's identifier")
    static let sdkAppIDMissing = TencentError(60012, "sdkappid is missing from the URL")
    /// 60002: Tencent's "check the request URL" for a path it does not serve.
    static func unknownCommand(_ path: String) -> TencentError {
        .init(60002, "unknown REST command \(path.prefix(120))")
    }
    /// 70500: Tencent's "internal server error, retry".
    static func internalError(_ reference: String) -> TencentError {
        .init(70500, "internal server error, see the gateway log (\(reference))")
    }

    // MARK: Message calls (900xx, 93000)

    static func malformedJSON(_ detail: String) -> TencentError { .init(90001, "JSON parse failed: \(detail)") }
    static func badMsgBody(_ detail: String) -> TencentError { .init(90002, "MsgBody is invalid: \(detail)") }
    static let toAccountMissing = TencentError(90003, "To_Account is missing or not a string")
    static let msgRandomMissing = TencentError(90005, "MsgRandom is missing or not an integer")
    static let msgBodyNotArray = TencentError(90007, "MsgBody must be an array of message elements")
    static let tooManyTargets = TencentError(90011, "To_Account holds more than 500 accounts")
    static func accountNotFound(_ account: String) -> TencentError {
        .init(90012, "To_Account \(account.prefix(64)) does not exist")
    }
    static let lifeTimeTooLong = TencentError(90026, "MsgLifeTime must be 0–604800 seconds (7 days)")
    static let bodyTooLarge = TencentError(93000, "the JSON request body exceeds 8 KB")

    // MARK: Accounts, profiles, groups, push

    /// 70107: the account has not been imported (account_delete of an unknown one).
    static func notImported(_ account: String) -> TencentError {
        .init(70107, "account \(account.prefix(64)) has not been imported")
    }
    /// 10004 (group) / generic invalid parameter.
    static func invalidParameter(_ detail: String) -> TencentError { .init(10004, "invalid parameter: \(detail)") }
    static func groupNotFound(_ groupID: String) -> TencentError {
        .init(10010, "group \(groupID.prefix(64)) does not exist or has been dismissed")
    }
    static func groupIDTaken(_ groupID: String) -> TencentError {
        .init(10021, "group id \(groupID.prefix(64)) is already in use")
    }
    /// 40001: Tencent's profile service answer to a malformed request.
    static func badProfileRequest(_ detail: String) -> TencentError { .init(40001, "invalid request: \(detail)") }
    /// 91000: all_member_push's answer to a malformed request.
    static func badPushRequest(_ detail: String) -> TencentError { .init(91000, "invalid request: \(detail)") }
}
