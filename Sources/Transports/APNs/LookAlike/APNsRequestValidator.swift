import TuisongLookAlikeKit

/// The parts of an HTTP/2 request APNs looks at, read from the request's headers in one pass.
struct APNsRequestHead {
    var method: String?
    var path: String?
    var authorization: String?
    var topic: String?
    var pushType: String?
    var priority: String?
    var expiration: String?
    var collapseID: String?
    var apnsID: String?
    /// Set when a header APNs reads (or `push-type`) appeared twice.
    var hasDuplicateHeader = false

    init(_ request: LookAlikeRequest) {
        method = request.method
        path = request.path.isEmpty ? nil : request.path
        var sawPushType = false
        for field in request.headers.fields {
            add(name: field.name, value: field.value, sawPushType: &sawPushType)
        }
    }

    private mutating func add(name: String, value: String, sawPushType: inout Bool) {
        func store(_ field: inout String?) {
            if field != nil { hasDuplicateHeader = true }
            field = value
        }
        switch name {
        case "authorization": store(&authorization)
        case "apns-topic": store(&topic)
        case "apns-push-type": store(&pushType)
        case "apns-priority": store(&priority)
        case "apns-expiration": store(&expiration)
        case "apns-collapse-id": store(&collapseID)
        case "apns-id": store(&apnsID)
        case "push-type":
            // `push-type` twice was always a duplicate (it once had a field of its own).
            if sawPushType { hasDuplicateHeader = true }
            sawPushType = true
        default: break
        }
    }
}

/// What a connection has proven about its sender so far.
struct ConnectionAuthentication {
    /// Topics of the TLS client certificate; nil when the connection has no client certificate.
    var certificateTopics: [String]?
    /// Team of the first provider token accepted on this connection; a second team is refused.
    var teamID: String?
    /// The previous request's authorization header and verdict: clients reuse one token for
    /// many requests, so this saves a lock and an ECDSA verification per request.
    var lastAuthorization: String?
    var lastVerdict: ProviderTokenVerdict?
}

/// The answer to one request, before faults.
struct APNsRequestVerdict: Equatable {
    var status: Int
    var reason: String?
    var deviceToken: String
    var apnsID: String
    var teamID: String?
    var keyID: String?
    /// The request carried a provider token that was accepted (raises the stream limit).
    var providerTokenAccepted = false
    /// The request failed with a 403 about its provider token.
    var providerTokenRejected = false
    /// The request was authenticated by the connection's client certificate.
    var certificateAuthenticated = false
}

/// Apple's checks on a push request, in Apple's order as far as it is observable: method, path,
/// duplicate headers, authentication, topic, the `apns-*` headers, then the payload.
struct APNsRequestValidator: Sendable {
    static let pushTypes: Set<String> = [
        "alert", "background", "location", "voip", "complication", "fileprovider", "mdm",
        "liveactivity", "pushtotalk", "widgets", "controls",
    ]
    static let payloadLimit = 4096
    static let voipPayloadLimit = 5120
    /// Bodies are kept only up to this size; beyond it the request is PayloadTooLarge anyway.
    static let bodyStorageLimit = voipPayloadLimit + 1
    /// A token issued further in the future than this is not a token of a sane clock.
    static let allowedClockSkewSeconds: Int64 = 300

    let maxTokenAgeSeconds: Int64
    let verifier: any ProviderTokenVerifying

    func validate(
        _ head: APNsRequestHead, body: [UInt8], bodyLength: Int,
        authentication: inout ConnectionAuthentication, nowSeconds: Int64,
        idGenerator: inout some RandomNumberGenerator
    ) -> APNsRequestVerdict {
        let requestID = head.apnsID.flatMap { Self.isCanonicalLowercaseUUID($0) ? $0 : nil }
        var verdict = APNsRequestVerdict(
            status: 200, reason: nil, deviceToken: "", apnsID: requestID ?? Self.makeUUID(using: &idGenerator))
        func fail(_ status: Int, _ reason: String) -> APNsRequestVerdict {
            verdict.status = status
            verdict.reason = reason
            return verdict
        }

        guard head.method == "POST" else { return fail(405, "MethodNotAllowed") }
        let prefix = "/3/device/"
        guard let path = head.path, path.hasPrefix(prefix) else { return fail(404, "BadPath") }
        let token = String(path.utf8.dropFirst(prefix.utf8.count))!
        verdict.deviceToken = token
        guard !token.isEmpty else { return fail(400, "MissingDeviceToken") }
        guard Self.isDeviceToken(token) else { return fail(400, "BadDeviceToken") }
        guard !head.hasDuplicateHeader else { return fail(400, "DuplicateHeaders") }

        // Authentication: a provider token wins over the certificate when both are present.
        if let authorization = head.authorization {
            switch authenticate(authorization, authentication: &authentication, nowSeconds: nowSeconds) {
            case .success(let key):
                verdict.teamID = key.teamID
                verdict.keyID = key.keyID
                verdict.providerTokenAccepted = true
            case .failure(let reason):
                verdict.providerTokenRejected = true
                return fail(403, reason.rawValue)
            }
        } else if authentication.certificateTopics != nil {
            verdict.certificateAuthenticated = true
        } else {
            verdict.providerTokenRejected = true
            return fail(403, "MissingProviderToken")
        }

        if let topics = authentication.certificateTopics, !verdict.providerTokenAccepted {
            // A certificate connection may omit the topic: APNs then uses the certificate's first.
            if let topic = head.topic, !topics.contains(topic) { return fail(400, "TopicDisallowed") }
            if head.topic == nil && topics.isEmpty { return fail(400, "MissingTopic") }
        } else if head.topic?.isEmpty ?? true {
            return fail(400, "MissingTopic")
        }

        if let pushType = head.pushType, !Self.pushTypes.contains(pushType) {
            return fail(400, "InvalidPushType")
        }
        if let priority = head.priority {
            guard priority == "10" || priority == "5" || priority == "1" else {
                return fail(400, "BadPriority")
            }
            // Apple: "Specifying priority 10 for a background notification is an error."
            if priority == "10" && head.pushType == "background" { return fail(400, "BadPriority") }
        }
        if let expiration = head.expiration, !Self.isUnsignedInteger(expiration) {
            return fail(400, "BadExpirationDate")
        }
        if let collapseID = head.collapseID, collapseID.utf8.count > 64 {
            return fail(400, "BadCollapseId")
        }
        if head.apnsID != nil && requestID == nil { return fail(400, "BadMessageId") }

        guard bodyLength > 0 else { return fail(400, "PayloadEmpty") }
        let limit = head.pushType == "voip" ? Self.voipPayloadLimit : Self.payloadLimit
        guard bodyLength <= limit else { return fail(413, "PayloadTooLarge") }
        // Mock-specific reason: APNs answers a malformed payload with 400 but no documented
        // reason string, and a gateway bug here should be loud.
        guard JSONObjectValidator.isJSONObject(body) else { return fail(400, "BadPayload") }
        // The gateway's key probe names no device Apple ever issued a token to: APNs answers it,
        // once the request is otherwise sound, with BadDeviceToken.
        if token == Self.probeDeviceToken { return fail(400, "BadDeviceToken") }
        return verdict
    }

    /// The made-up device token of the gateway's `.p8` probe (`APNsConnectionTester.probeToken`).
    static let probeDeviceToken = String(repeating: "f", count: 64)

    enum TokenRejection: String, Error {
        case invalid = "InvalidProviderToken"
        case expired = "ExpiredProviderToken"
    }

    private func authenticate(
        _ authorization: String, authentication: inout ConnectionAuthentication, nowSeconds: Int64
    ) -> Result<ProviderTokenClaims, TokenRejection> {
        let verdict: ProviderTokenVerdict
        if authorization == authentication.lastAuthorization, let last = authentication.lastVerdict {
            verdict = last
        } else {
            verdict = Self.bearerToken(authorization).map(verifier.verify) ?? .invalid
            authentication.lastAuthorization = authorization
            authentication.lastVerdict = verdict
        }
        guard case .valid(let claims) = verdict else { return .failure(.invalid) }
        if claims.issuedAt > nowSeconds + Self.allowedClockSkewSeconds { return .failure(.invalid) }
        if nowSeconds - claims.issuedAt > maxTokenAgeSeconds { return .failure(.expired) }
        if let team = authentication.teamID, team != claims.teamID { return .failure(.invalid) }
        authentication.teamID = claims.teamID
        return .success(claims)
    }

    /// `bearer <jwt>`; the scheme is case-insensitive (RFC 7235).
    static func bearerToken(_ authorization: String) -> String? {
        let utf8 = authorization.utf8
        guard utf8.count > 7 else { return nil }
        let scheme = String(decoding: utf8.prefix(7), as: UTF8.self).lowercased()
        guard scheme == "bearer " else { return nil }
        let token = String(decoding: utf8.dropFirst(7), as: UTF8.self)
        return token.isEmpty ? nil : token
    }

    /// Hex digits, an even count, at most 200 (APNs tokens are 32 bytes today, up to 100 allowed).
    static func isDeviceToken(_ token: String) -> Bool {
        let utf8 = token.utf8
        guard utf8.count % 2 == 0, utf8.count <= 200 else { return false }
        return utf8.allSatisfy(isHexDigit)
    }

    static func isHexDigit(_ byte: UInt8) -> Bool {
        (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) || (byte >= 0x41 && byte <= 0x46)
    }

    static func isUnsignedInteger(_ text: String) -> Bool {
        let utf8 = text.utf8
        return !utf8.isEmpty && utf8.count <= 18 && utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` with lower-case hex digits.
    static func isCanonicalLowercaseUUID(_ text: String) -> Bool {
        let utf8 = Array(text.utf8)
        guard utf8.count == 36 else { return false }
        for (index, byte) in utf8.enumerated() {
            if index == 8 || index == 13 || index == 18 || index == 23 {
                guard byte == 0x2D else { return false }
            } else {
                guard (byte >= 0x30 && byte <= 0x39) || (byte >= 0x61 && byte <= 0x66) else { return false }
            }
        }
        return true
    }

    /// A random (version 4) UUID in APNs' lower-case canonical form.
    static func makeUUID(using generator: inout some RandomNumberGenerator) -> String {
        var bytes = (generator.next() as UInt64, generator.next() as UInt64)
        return withUnsafeMutableBytes(of: &bytes) { raw in
            raw[6] = (raw[6] & 0x0F) | 0x40
            raw[8] = (raw[8] & 0x3F) | 0x80
            let digits: StaticString = "0123456789abcdef"
            return String(unsafeUninitializedCapacity: 36) { output in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        output[position] = 0x2D
                        position += 1
                    }
                    output[position] = digits.utf8Start[Int(raw[index] >> 4)]
                    output[position + 1] = digits.utf8Start[Int(raw[index] & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }
}

/// SplitMix64 seeded from the system generator: apns-ids need to be unique, not secret, and the
/// system generator costs a getrandom(2) call per draw — several per request at benchmark rates.
struct APNsIDGenerator: RandomNumberGenerator {
    private var state: UInt64

    init() {
        var system = SystemRandomNumberGenerator()
        state = system.next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}

/// Faults that replace a valid answer, chosen by device-token prefix.
struct TokenPrefixFaults: Sendable {
    /// Longest prefix first, so `400bad` wins over `400`.
    private let entries: [(prefix: String, fault: LookAlikeConfiguration.APNsFault)]

    init(_ prefixes: [String: LookAlikeConfiguration.APNsFault]) {
        entries = prefixes.map { (prefix: $0.key.lowercased(), fault: $0.value) }
            .sorted { $0.prefix.utf8.count > $1.prefix.utf8.count }
    }

    var isEmpty: Bool { entries.isEmpty }

    func fault(forDeviceToken token: String) -> LookAlikeConfiguration.APNsFault? {
        guard !entries.isEmpty else { return nil }
        let lowered = token.lowercased()
        return entries.first { lowered.hasPrefix($0.prefix) }?.fault
    }
}
