import Foundation
import Synchronization
import TuisongCore
import TuisongCrypto

/// What a verified UserSig v2 says.
struct UserSigClaims: Sendable, Hashable {
    var identifier: String
    var sdkAppID: Int64
    /// When it was issued (`TLS.time`, Unix seconds) and for how long (`TLS.expire`, seconds).
    var issuedAt: Int64
    var lifetime: Int64
    /// `TLS.userbuf` (base64), when the sig carries one (TRTC's PrivateMapKey).
    var userBuffer: String?
}

/// Verifies Tencent's UserSig v2, the ticket Tencent's `TLSSigAPIv2` libraries issue:
///
/// 1. content = `"TLS.identifier:<id>\nTLS.sdkappid:<appid>\nTLS.time:<t>\nTLS.expire:<sec>\n"`,
///    plus `"TLS.userbuf:<base64>\n"` when there is a userbuf;
/// 2. `TLS.sig` = base64(HMAC-SHA256(secret key, content));
/// 3. the JSON `{"TLS.ver":"2.0","TLS.identifier",…,"TLS.sig"}` zlib-compressed, base64-encoded
///    with `+ / =` replaced by `* - _`.
///
/// Errors are Tencent's: 70002 empty, 70003 not decodable, 70014 another SDKAppID, 70013
/// another identifier, 70009 bad signature, 70001 expired (`time + expire < now`).
enum UserSig {
    /// The largest decompressed sig accepted; real ones are about 200 bytes (a userbuf adds
    /// a few hundred), so anything bigger is not a UserSig.
    static let maximumDecodedSize = 16_384

    static func verify(
        _ userSig: String, identifier: String, sdkAppID: Int64, secretKey: String, now: Date
    ) throws(TencentError) -> UserSigClaims {
        let claims = try decode(userSig)
        guard claims.sdkAppID == sdkAppID else { throw .userSigAppMismatch(claims.sdkAppID, sdkAppID) }
        guard claims.identifier == identifier else {
            throw .userSigIdentifierMismatch(claims.identifier, identifier)
        }
        let expected = signature(
            identifier: claims.identifier, sdkAppID: claims.sdkAppID, issuedAt: claims.issuedAt,
            lifetime: claims.lifetime, userBuffer: claims.userBuffer, secretKey: secretKey)
        guard constantTimeEquals(Array(expected.utf8), Array(claims.signature.utf8)) else {
            throw .userSigBadSignature
        }
        try checkUnexpired(claims.claims, now: now)
        return claims.claims
    }

    /// 70001 once `time + expire` has passed.
    static func checkUnexpired(_ claims: UserSigClaims, now: Date) throws(TencentError) {
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let (expiry, overflow) = claims.issuedAt.addingReportingOverflow(claims.lifetime)
        if !overflow && expiry < seconds {
            throw .userSigExpired("issued at \(claims.issuedAt) for \(claims.lifetime) s, server time \(seconds)")
        }
    }

    /// `TLS.sig` for these fields: base64(HMAC-SHA256(key, content)).
    static func signature(
        identifier: String, sdkAppID: Int64, issuedAt: Int64, lifetime: Int64, userBuffer: String?, secretKey: String
    ) -> String {
        var content =
            "TLS.identifier:\(identifier)\nTLS.sdkappid:\(sdkAppID)\nTLS.time:\(issuedAt)\nTLS.expire:\(lifetime)\n"
        if let userBuffer { content += "TLS.userbuf:\(userBuffer)\n" }
        return Data(HMAC.sha256(key: Array(secretKey.utf8), message: Array(content.utf8))).base64EncodedString()
    }

    /// The sig's fields plus the signature to check.
    struct Decoded {
        var claims: UserSigClaims
        var signature: String
        var identifier: String { claims.identifier }
        var sdkAppID: Int64 { claims.sdkAppID }
        var issuedAt: Int64 { claims.issuedAt }
        var lifetime: Int64 { claims.lifetime }
        var userBuffer: String? { claims.userBuffer }
    }

    /// Undoes the encoding without checking the signature: `*-_` base64 → zlib → JSON.
    static func decode(_ userSig: String) throws(TencentError) -> Decoded {
        guard !userSig.isEmpty else { throw .userSigMissing }
        guard userSig.utf8.count <= 4096 else { throw .userSigMalformed("longer than 4096 characters") }
        var base64 = ""
        base64.reserveCapacity(userSig.utf8.count + 3)
        for character in userSig.unicodeScalars {
            switch character {
            case "*": base64.append("+")
            case "-": base64.append("/")
            case "_": base64.append("=")
            case "A"..."Z", "a"..."z", "0"..."9": base64.unicodeScalars.append(character)
            // A sig pasted with its standard alphabet (or decoded `+` turned into a space).
            case "+", " ": base64.append("+")
            case "/", "=": base64.unicodeScalars.append(character)
            default: throw .userSigMalformed("character \"\(character.escaped(asASCII: true))\" is not in its alphabet")
            }
        }
        // Some issuers strip the padding.
        while base64.utf8.count % 4 != 0 { base64.append("=") }
        guard let compressed = Data(base64Encoded: base64) else { throw .userSigMalformed("not base64") }
        let json: [UInt8]
        do {
            json = try Zlib.decompress(Array(compressed), limit: maximumDecodedSize)
        } catch {
            throw .userSigMalformed("not zlib data (\(error.reason)); is it truncated?")
        }
        let object: [String: JSONValue]
        do {
            guard let members = try JSONValue(parsing: json).objectValue else {
                throw TencentError.userSigMalformed("not a JSON object")
            }
            object = members
        } catch let error as TencentError {
            throw error
        } catch {
            throw .userSigMalformed("not JSON")
        }
        if let version = object["TLS.ver"], version.stringValue != "2.0" {
            throw .userSigMalformed("TLS.ver must be \"2.0\"")
        }
        guard let identifier = object["TLS.identifier"]?.stringValue else {
            throw .userSigMalformed("TLS.identifier is missing")
        }
        guard let sdkAppID = integer(object["TLS.sdkappid"]) else {
            throw .userSigMalformed("TLS.sdkappid is missing")
        }
        guard let issuedAt = integer(object["TLS.time"]) else { throw .userSigMalformed("TLS.time is missing") }
        guard let lifetime = integer(object["TLS.expire"]) else { throw .userSigMalformed("TLS.expire is missing") }
        guard let signature = object["TLS.sig"]?.stringValue, !signature.isEmpty else {
            throw .userSigMalformed("TLS.sig is missing")
        }
        let userBuffer: String?
        switch object["TLS.userbuf"] {
        case nil, .null?: userBuffer = nil
        case .string(let value)?: userBuffer = value
        default: throw .userSigMalformed("TLS.userbuf must be a string")
        }
        return Decoded(
            claims: UserSigClaims(
                identifier: identifier, sdkAppID: sdkAppID, issuedAt: issuedAt, lifetime: lifetime,
                userBuffer: userBuffer),
            signature: signature)
    }

    /// Tencent's libraries write numbers; some older ones wrote numeric strings.
    private static func integer(_ value: JSONValue?) -> Int64? {
        switch value {
        case .int(let number)?: return number
        case .double(let number)?: return Int64(exactly: number)
        case .string(let text)?: return Int64(text)
        default: return nil
        }
    }

    private static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

/// UserSigs verified before, with the claims they carried: an app server signs one sig for its
/// administrator and sends it with every call, and decoding it (base64, zlib, JSON) and its
/// HMAC were a tenth of a Tencent message call's own work (issue #47's profile). A sig is
/// remembered with the identifier, SDKAppID and secret key it was verified under, so a
/// rotated key or another caller verifies afresh; expiry is checked on every use.
final class VerifiedUserSigs: Sendable {
    struct Key: Hashable, Sendable {
        var userSig: String
        var identifier: String
        var sdkAppID: Int64
        var secretKey: String
    }

    /// Past this many sigs the memory starts again (sigs live for days; apps have few callers).
    let capacity: Int
    private let verified = Mutex<[Key: UserSigClaims]>([:])

    init(capacity: Int = 4096) { self.capacity = capacity }

    /// `UserSig.verify`, remembered.
    func verify(
        _ userSig: String, identifier: String, sdkAppID: Int64, secretKey: String, now: Date
    ) throws(TencentError) -> UserSigClaims {
        let key = Key(userSig: userSig, identifier: identifier, sdkAppID: sdkAppID, secretKey: secretKey)
        if let claims = verified.withLock({ $0[key] }) {
            try UserSig.checkUnexpired(claims, now: now)
            return claims
        }
        let claims = try UserSig.verify(
            userSig, identifier: identifier, sdkAppID: sdkAppID, secretKey: secretKey, now: now)
        verified.withLock { verified in
            if verified.count >= capacity { verified.removeAll(keepingCapacity: true) }
            verified[key] = claims
        }
        return claims
    }

    var count: Int { verified.withLock { $0.count } }
}
