import Foundation
import Synchronization
internal import TuisongCrypto
import TuisongLookAlikeKit

extension AndroidPushService {
    /// Firebase Cloud Messaging HTTP v1, with Google's service-account OAuth token endpoint.
    public static let fcm = AndroidPushService("fcm")
}

/// The look-alike of Google's OAuth token endpoint (JWT-bearer grant of a service account) and
/// FCM HTTP v1 `messages:send`, answering as `docs/reference/android.md` §1–2 says. Token
/// faults: `unregistered` is 404 `UNREGISTERED`, `invalidArgument` 400 `INVALID_ARGUMENT` (the
/// token message), `quotaExceeded` 429 `QUOTA_EXCEEDED` with `Retry-After`, `unavailable` 503
/// `UNAVAILABLE`, `internal` 500 `INTERNAL`. It sends no receipts.
package final class FCMLookAlike: LookAlikeService {
    package static let declaration = LookAlikeDeclaration(
        service: .fcm,
        summary: """
            FCM HTTP v1 (POST /token, the Google service-account token endpoint; POST \
            /v1/projects/<project>/messages:send)
            """,
        configurationKeys: [("fcmServiceAccounts", #"{"clientEmail","keyID","publicKeyPEM","projectID"}"#)],
        setupKeys: ["fcmServiceAccount", "fcmPrivateKeyPEM", "fcmClientID"],
        makeSetup: { setup in
            let key = try LookAlikeLocalSetup.sharedRSAKey()
            try setup.setLookAlikeMaterial(
                "fcmServiceAccount",
                LookAlikeConfiguration.FCMServiceAccount(
                    clientEmail: "tuisong-local@tuisong-local.iam.gserviceaccount.com",
                    keyID: FCMLookAlike.randomString(count: 40, alphabet: "0123456789abcdef"),
                    publicKeyPEM: try key.publicKey.pem(), projectID: "tuisong-local"))
            try setup.setLookAlikeMaterial("fcmPrivateKeyPEM", try key.pkcs8PEM())
            try setup.setLookAlikeMaterial(
                "fcmClientID", "1" + FCMLookAlike.randomString(count: 20, alphabet: "0123456789"))
        },
        configure: { configuration, setup in configuration.fcmServiceAccounts.append(setup.fcmServiceAccount) },
        start: { host, configuration in try FCMLookAlike(host: host, configuration: configuration) },
        fallbackCredential: { setup, baseURL in
            LookAlikeCredential(
                vendorAppID: setup.fcmServiceAccount.projectID, clientID: setup.fcmServiceAccount.clientEmail,
                secret: setup.fcmServiceAccountJSON(tokenURI: baseURL + "/token"))
        },
        banner: { setup, base, filePrefix in
            let path = filePrefix + "fcm-service-account.json"
            guard
                FileManager.default.createFile(
                    atPath: path, contents: Data(setup.fcmServiceAccountJSON(tokenURI: base + "/token")),
                    attributes: [.posixPermissions: 0o600])
            else { throw LocalLookAlikeError("cannot write \(path)") }
            let account = setup.fcmServiceAccount
            return [
                "token_url": base + "/token", "send_url": "\(base)/v1/projects/\(account.projectID)/messages:send",
                "service_account_file": path, "project_id": account.projectID, "client_email": account.clientEmail,
            ]
        })

    struct TrustedAccount: Sendable {
        let account: LookAlikeConfiguration.FCMServiceAccount
        let publicKey: PublicKey
    }

    package let service = AndroidPushService.fcm
    package let host: LookAlikeHost
    /// The service accounts its token endpoint trusts, by `client_email`; growable at run time.
    private let accounts: Mutex<[String: TrustedAccount]>

    init(host: LookAlikeHost, configuration: LookAlikeConfiguration) throws {
        self.host = host
        var accounts: [String: TrustedAccount] = [:]
        for account in try configuration.lookAlikeSetting(
            "fcmServiceAccounts", as: [LookAlikeConfiguration.FCMServiceAccount].self) ?? []
        {
            accounts[account.clientEmail] = TrustedAccount(
                account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        }
        self.accounts = Mutex(accounts)
    }

    /// Trusts one more service account (replacing one with the same `client_email`).
    func trust(_ account: LookAlikeConfiguration.FCMServiceAccount) throws {
        let trusted = TrustedAccount(account: account, publicKey: try PublicKey(pem: account.publicKeyPEM))
        accounts.withLock { $0[account.clientEmail] = trusted }
    }

    /// A stored FCM credential is the service-account JSON: its public key is trusted.
    package func trust(vendorAppID: String, clientID: String, secret: [UInt8]) throws {
        guard let object = try JSONSerialization.jsonObject(with: Data(secret)) as? [String: Any],
            let email = object["client_email"] as? String, let pem = object["private_key"] as? String,
            let project = object["project_id"] as? String
        else { throw LocalLookAlikeError("the FCM service account lacks client_email, private_key or project_id") }
        try trust(
            .init(
                clientEmail: email, keyID: object["private_key_id"] as? String ?? "",
                publicKeyPEM: try PrivateKey(pem: pem).publicKey.pem(), projectID: project))
    }

    package func answer(_ request: LookAlikeRequest, faults: AndroidTokenPrefixFaults) -> AndroidResponse? {
        let path = request.pathWithoutQuery
        if path == "/token" {
            var response = googleToken(request)
            response.isSignIn = true
            return response
        }
        // "", "v1", "projects", P, "messages:send"
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 5, parts[1] == "v1", parts[2] == "projects", parts[4] == "messages:send",
            !parts[3].isEmpty
        else { return nil }
        return fcmSend(request, project: String(parts[3]), faults: faults)
    }

    static let jwtBearerGrant = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    static let googleTokenAudience = "https://oauth2.googleapis.com/token"
    /// Either scope authorises `messages:send`.
    static let fcmScopes: Set<String> = [
        "https://www.googleapis.com/auth/firebase.messaging", "https://www.googleapis.com/auth/cloud-platform",
    ]
    static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
    static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"
    /// Google's front end refuses larger bodies before FCM sees them.
    static let fcmRequestLimit = 1_048_576
    /// FCM: "4096 bytes for most messages" (keys and values of the payload data).
    static let fcmPayloadLimit = 4096
    static let fcmMaximumTTLSeconds = 2_419_200

    // MARK: POST /token

    func googleToken(_ request: LookAlikeRequest) -> AndroidResponse {
        func refuse(_ status: Int, _ error: String, _ description: String) -> AndroidResponse {
            AndroidResponse(
                status: status,
                json:
                    #"{"error":\#(RequestLogLine.quoted(error)),"error_description":\#(RequestLogLine.quoted(description))}"#,
                service: .fcm, code: error)
        }
        guard request.method == "POST" else { return refuse(405, "invalid_request", "Method Not Allowed") }
        guard let form = FormBody.parse(request.body) else {
            return refuse(400, "invalid_request", "Invalid request body")
        }
        guard let grantType = form["grant_type"] else {
            return refuse(400, "invalid_request", "Required parameter is missing: grant_type")
        }
        guard grantType == Self.jwtBearerGrant else {
            return refuse(400, "unsupported_grant_type", "Invalid grant_type: \(grantType)")
        }
        guard let assertion = form["assertion"], !assertion.isEmpty else {
            return refuse(400, "invalid_request", "Required parameter is missing: assertion")
        }
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(String(parts[0])),
            let claimsBytes = Base64URL.decode(String(parts[1])), let header = MockJSON.parse(headerBytes),
            let claims = MockJSON.parse(claimsBytes), header.members != nil, claims.members != nil
        else {
            return refuse(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard header["alg"]?.stringValue == "RS256" else {
            return refuse(400, "invalid_grant", "Invalid JWT Signature.")
        }
        guard let issuer = claims["iss"]?.stringValue, let trusted = accounts.withLock({ $0[issuer] }) else {
            return refuse(400, "invalid_grant", "Invalid grant: account not found")
        }
        if let keyID = header["kid"], keyID.stringValue != trusted.account.keyID {
            return refuse(400, "invalid_grant", "Invalid JWT Signature.")
        }
        do {
            _ = try JWT.verifyRS256(assertion, publicKey: trusted.publicKey)
        } catch {
            return refuse(400, "invalid_grant", "Invalid JWT Signature.")
        }
        let nowSeconds = request.receivedAtMilliseconds / 1000
        let timeframe =
            "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
        guard let issuedAt = claims["iat"]?.integerValue.map(Int64.init),
            let expiresAt = claims["exp"]?.integerValue.map(Int64.init), expiresAt > issuedAt,
            expiresAt - issuedAt <= 3600, issuedAt <= nowSeconds + 300, expiresAt > nowSeconds
        else {
            return refuse(400, "invalid_grant", timeframe)
        }
        // google-auth-python always says oauth2.googleapis.com while posting to token_uri; other
        // libraries name token_uri itself, which here is this host's /token.
        let ownAudience = request.authority.map { "https://\($0)/token" }
        let audience = claims["aud"]?.stringValue
        guard let audience, audience == Self.googleTokenAudience || audience == ownAudience else {
            return refuse(
                400, "invalid_grant",
                "Invalid JWT: Failed audience check. The right audience is \(ownAudience ?? Self.googleTokenAudience)")
        }
        let scopes = (claims["scope"]?.stringValue ?? "").split(separator: " ").map(String.init)
        guard !scopes.isEmpty else { return refuse(400, "invalid_scope", "Empty or missing scope not allowed.") }
        let token = issueToken(
            prefix: "ya29.mock-", principal: issuer, target: trusted.account.projectID, scopes: scopes,
            nowMilliseconds: request.receivedAtMilliseconds)
        var response = AndroidResponse(
            status: 200,
            json:
                #"{"access_token":\#(RequestLogLine.quoted(token)),"expires_in":\#(lifetimeSeconds),"token_type":"Bearer"}"#,
            service: .fcm, code: nil)
        response.principal = issuer
        response.target = trusted.account.projectID
        return response
    }

    // MARK: POST /v1/projects/{project}/messages:send

    /// An FCM error answer: `{"error":{"code","message","status","details"}}`.
    static func fcmError(
        _ httpStatus: Int, _ status: String, _ message: String, errorCode: String? = nil,
        fieldViolation: (field: String, description: String)? = nil, extraHeaders: [(String, String)] = []
    ) -> AndroidResponse {
        var details: [String] = []
        if let errorCode {
            details.append(#"{"@type":"\#(fcmErrorType)","errorCode":"\#(errorCode)"}"#)
        }
        if let fieldViolation {
            details.append(
                #"{"@type":"\#(badRequestType)","fieldViolations":[{"field":\#(RequestLogLine.quoted(fieldViolation.field)),"description":\#(RequestLogLine.quoted(fieldViolation.description))}]}"#
            )
        }
        var json =
            #"{"error":{"code":\#(httpStatus),"message":\#(RequestLogLine.quoted(message)),"status":"\#(status)""#
        if !details.isEmpty { json += #","details":["# + details.joined(separator: ",") + "]" }
        json += "}}"
        return AndroidResponse(
            status: httpStatus, json: json, service: .fcm, code: errorCode ?? status, extraHeaders: extraHeaders)
    }

    func fcmSend(_ request: LookAlikeRequest, project: String, faults: AndroidTokenPrefixFaults) -> AndroidResponse {
        var response = fcmCheckedSend(request, project: project, faults: faults)
        response.target = project
        if response.status != 200 {
            recorder.update(.fcm) {
                $0.requestsRefused += 1
                $0.messagesRefused += 1
            }
        }
        return response
    }

    private func fcmCheckedSend(_ request: LookAlikeRequest, project: String, faults: AndroidTokenPrefixFaults)
        -> AndroidResponse
    {
        guard request.method == "POST" else { return Self.fcmError(404, "NOT_FOUND", "Method not found.") }
        let challenge = [("www-authenticate", #"Bearer realm="https://accounts.google.com/", error="invalid_token""#)]
        guard let bearer = Self.bearerToken(request.authorization) else {
            recorder.update(.fcm) { $0.authenticationFailures += 1 }
            return Self.fcmError(
                401, "UNAUTHENTICATED",
                "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                extraHeaders: challenge)
        }
        guard case .valid(let issued) = tokens.lookup(bearer, nowMilliseconds: request.receivedAtMilliseconds),
            issued.service == .fcm
        else {
            recorder.update(.fcm) { $0.authenticationFailures += 1 }
            return Self.fcmError(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.",
                extraHeaders: challenge)
        }
        guard issued.scopes.contains(where: Self.fcmScopes.contains) else {
            recorder.update(.fcm) { $0.authenticationFailures += 1 }
            return Self.fcmError(403, "PERMISSION_DENIED", "Request had insufficient authentication scopes.")
        }
        guard issued.target == project else {
            recorder.update(.fcm) { $0.authenticationFailures += 1 }
            return Self.fcmError(
                403, "PERMISSION_DENIED",
                "Permission 'cloudmessaging.messages.create' denied on resource '//cloudresourcemanager.googleapis.com/projects/\(project)' (or it may not exist)."
            )
        }
        guard request.bodyLength <= Self.fcmRequestLimit else {
            return Self.fcmError(
                400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: \(Self.fcmRequestLimit) bytes.")
        }
        guard let body = MockJSON.parse(request.body), body.members != nil else {
            return Self.fcmError(
                400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unexpected token.",
                fieldViolation: ("", "Invalid JSON payload received. Unexpected token."))
        }
        if let failure = FCMSchema.check(body, as: FCMSchema.sendRequest, path: "") {
            return Self.fcmError(
                400, "INVALID_ARGUMENT", failure.description, fieldViolation: (failure.field, failure.description))
        }
        let validateOnly: Bool
        if case .bool(let flag) = body["validate_only"] ?? body["validateOnly"] ?? .bool(false) {
            validateOnly = flag
        } else {
            validateOnly = false
        }
        guard let message = body["message"], message.members != nil else {
            return Self.fcmError(400, "INVALID_ARGUMENT", "Recipient of the message is not set.")
        }
        if let failure = FCMSchema.semanticFailure(of: message) { return failure }

        let token = message["token"]?.stringValue
        if let token, let fault = faults.fault(forToken: token) {
            switch fault.kind {
            case .unregistered:
                return Self.fcmError(404, "NOT_FOUND", "Requested entity was not found.", errorCode: "UNREGISTERED")
            case .invalidArgument:
                return Self.fcmError(
                    400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                    errorCode: "INVALID_ARGUMENT")
            case .quotaExceeded:
                return Self.fcmError(
                    429, "RESOURCE_EXHAUSTED", "Quota exceeded for the device.", errorCode: "QUOTA_EXCEEDED",
                    extraHeaders: [("retry-after", String(max(0, fault.retryAfterSeconds ?? 60)))])
            case .unavailable:
                return Self.fcmError(
                    503, "UNAVAILABLE", "The service is currently unavailable.", errorCode: "UNAVAILABLE")
            case .internal:
                return Self.fcmError(500, "INTERNAL", "Internal error encountered.", errorCode: "INTERNAL")
            }
        }

        let messageID: String
        if validateOnly {
            messageID = "fake_message_id"
        } else {
            var generator = SystemRandomNumberGenerator()
            let suffix = (0..<8).map { _ in UInt8.random(in: 0...255, using: &generator) }
            messageID = "0:\(request.receivedAtMilliseconds)%\(Hex.encode(suffix))"
        }
        let name = "projects/\(project)/messages/\(messageID)"
        var response = AndroidResponse(
            status: 200, json: #"{"name":\#(RequestLogLine.quoted(name))}"#, service: .fcm, code: nil)
        response.principal = issued.principal
        response.tokenCount = token == nil ? 0 : 1
        if !validateOnly {
            recorder.update(.fcm) { $0.messagesDelivered += 1 }
            recorder.record(
                ReceivedAndroidMessage(
                    service: .fcm, target: project, principal: issued.principal, tokens: token.map { [$0] } ?? [],
                    refusedTokens: [], messageID: name, body: request.body, connectionID: request.connectionID,
                    streamID: request.streamID, timestampHeader: nil,
                    receivedAtMilliseconds: request.receivedAtMilliseconds))
        }
        return response
    }
}

/// The shape of an FCM v1 send request, checked the way proto3 JSON parsing checks it: unknown
/// names are refused (snake_case and lowerCamelCase both known), every value must have its
/// field's type, enums take their names (any case: the Admin SDKs send `"high"`) or numbers.
enum FCMSchema {
    indirect enum FieldType {
        case string, bool, int32, duration, number
        case enumeration(String, Set<String>)
        case stringArray, durationArray, stringMap
        case object(String, [String: FieldType])
        /// A `google.protobuf.Struct` or similar free-form object.
        case anyObject
    }

    struct Failure {
        var field: String
        var description: String
    }

    static let notification: FieldType = .object(
        "google.firebase.fcm.v1.Notification", ["title": .string, "body": .string, "image": .string])
    static let androidNotification: FieldType = .object(
        "google.firebase.fcm.v1.AndroidNotification",
        [
            "title": .string, "body": .string, "icon": .string, "color": .string, "sound": .string, "tag": .string,
            "click_action": .string, "body_loc_key": .string, "body_loc_args": .stringArray,
            "title_loc_key": .string, "title_loc_args": .stringArray, "channel_id": .string, "ticker": .string,
            "sticky": .bool, "event_time": .string, "local_only": .bool,
            "notification_priority": .enumeration(
                "google.firebase.fcm.v1.AndroidNotification.NotificationPriority",
                [
                    "PRIORITY_UNSPECIFIED", "PRIORITY_MIN", "PRIORITY_LOW", "PRIORITY_DEFAULT", "PRIORITY_HIGH",
                    "PRIORITY_MAX",
                ]),
            "default_sound": .bool, "default_vibrate_timings": .bool, "default_light_settings": .bool,
            "vibrate_timings": .durationArray,
            "visibility": .enumeration(
                "google.firebase.fcm.v1.AndroidNotification.Visibility",
                ["VISIBILITY_UNSPECIFIED", "PRIVATE", "PUBLIC", "SECRET"]),
            "notification_count": .int32, "light_settings": .anyObject, "image": .string,
            "bypass_proxy_notification": .bool,
            "proxy": .enumeration(
                "google.firebase.fcm.v1.AndroidNotification.Proxy",
                ["PROXY_UNSPECIFIED", "ALLOW", "DENY", "IF_PRIORITY_LOWERED"]),
        ])
    static let androidConfig: FieldType = .object(
        "google.firebase.fcm.v1.AndroidConfig",
        [
            "collapse_key": .string,
            "priority": .enumeration("google.firebase.fcm.v1.AndroidMessagePriority", ["NORMAL", "HIGH"]),
            "ttl": .duration, "restricted_package_name": .string, "data": .stringMap,
            "notification": androidNotification,
            "fcm_options": .object("google.firebase.fcm.v1.AndroidFcmOptions", ["analytics_label": .string]),
            "direct_boot_ok": .bool, "bandwidth_constrained_ok": .bool, "restricted_satellite_ok": .bool,
        ])
    static let message: FieldType = .object(
        "google.firebase.fcm.v1.Message",
        [
            "name": .string, "data": .stringMap, "notification": notification, "android": androidConfig,
            "webpush": .object(
                "google.firebase.fcm.v1.WebpushConfig",
                [
                    "headers": .stringMap, "data": .stringMap, "notification": .anyObject,
                    "fcm_options": .object(
                        "google.firebase.fcm.v1.WebpushFcmOptions", ["link": .string, "analytics_label": .string]),
                ]),
            "apns": .object(
                "google.firebase.fcm.v1.ApnsConfig",
                [
                    "headers": .stringMap, "payload": .anyObject,
                    "fcm_options": .object(
                        "google.firebase.fcm.v1.ApnsFcmOptions", ["analytics_label": .string, "image": .string]),
                    "live_activity_token": .string,
                ]),
            "fcm_options": .object("google.firebase.fcm.v1.FcmOptions", ["analytics_label": .string]),
            "token": .string, "topic": .string, "condition": .string, "fid": .string,
        ])
    static let sendRequest: FieldType = .object(
        "google.firebase.fcm.v1.SendMessageRequest", ["validate_only": .bool, "message": message])

    /// `collapse_key` → `collapseKey`: proto3 JSON accepts both spellings.
    static func camelCase(_ name: String) -> String {
        var result = ""
        var upper = false
        for character in name {
            if character == "_" {
                upper = true
            } else {
                result.append(upper ? Character(character.uppercased()) : character)
                upper = false
            }
        }
        return result
    }

    /// The first shape error, depth first in member order.
    static func check(_ value: MockJSON, as type: FieldType, path: String) -> Failure? {
        func invalid(_ typeName: String) -> Failure {
            Failure(field: path, description: "Invalid value at '\(path)' (\(typeName)), \(value.text)")
        }
        if value.isNull { return nil }
        switch type {
        case .string:
            return value.stringValue == nil ? invalid("TYPE_STRING") : nil
        case .bool:
            if case .bool = value { return nil }
            return invalid("TYPE_BOOL")
        case .number:
            if case .number = value { return nil }
            return invalid("TYPE_DOUBLE")
        case .int32:
            guard let integer = value.integerValue, integer >= Int(Int32.min), integer <= Int(Int32.max) else {
                return invalid("TYPE_INT32")
            }
            return nil
        case .duration:
            guard let text = value.stringValue, parseDuration(text) != nil else {
                return invalid("type.googleapis.com/google.protobuf.Duration")
            }
            return nil
        case .enumeration(let name, let values):
            if let text = value.stringValue, values.contains(text.uppercased()) { return nil }
            if case .number(let text) = value, let number = Int(text), number >= 0, number < values.count { return nil }
            return invalid("type.googleapis.com/\(name)")
        case .stringArray, .durationArray:
            guard case .array(let elements) = value else { return invalid("TYPE_STRING") }
            for (index, element) in elements.enumerated() {
                let elementType: FieldType = if case .durationArray = type { .duration } else { .string }
                if let failure = check(element, as: elementType, path: "\(path)[\(index)]") { return failure }
            }
            return nil
        case .stringMap:
            guard let members = value.members else { return invalid("TYPE_STRING") }
            for (index, member) in members.enumerated() where member.value.stringValue == nil {
                let field = "\(path)[\(index)].value"
                return Failure(
                    field: field, description: "Invalid value at '\(field)' (TYPE_STRING), \(member.value.text)")
            }
            return nil
        case .anyObject:
            return value.members == nil ? invalid("type.googleapis.com/google.protobuf.Struct") : nil
        case .object(let name, let fields):
            guard let members = value.members else { return invalid("type.googleapis.com/\(name)") }
            for member in members {
                let fieldName =
                    fields[member.key] != nil ? member.key : fields.keys.first { camelCase($0) == member.key }
                guard let fieldName, let fieldType = fields[fieldName] else {
                    let at = path.isEmpty ? "" : " at '\(path)'"
                    return Failure(
                        field: path,
                        description:
                            "Invalid JSON payload received. Unknown name \"\(member.key)\"\(at): Cannot find field.")
                }
                let childPath = path.isEmpty ? fieldName : "\(path).\(fieldName)"
                if let failure = check(member.value, as: fieldType, path: childPath) { return failure }
            }
            return nil
        }
    }

    /// Seconds of a protobuf Duration string (`"3.5s"`), nil when malformed.
    static func parseDuration(_ text: String) -> Double? {
        guard text.hasSuffix("s") else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count <= 2, let whole = parts.first else { return nil }
        let digitsOnly: (Substring) -> Bool = { !$0.isEmpty && $0.allSatisfy(\.isASCIIDigit) }
        let unsignedWhole = whole.hasPrefix("-") ? whole.dropFirst() : whole
        guard digitsOnly(unsignedWhole) else { return nil }
        if parts.count == 2 { guard digitsOnly(parts[1]), parts[1].count <= 9 else { return nil } }
        return Double(number)
    }

    /// Checks FCM makes after parsing: one target, a plausible token, TTL range, reserved data
    /// keys, payload size.
    static func semanticFailure(of message: MockJSON) -> AndroidResponse? {
        let targets = ["token", "topic", "condition", "fid"].filter { message[$0]?.stringValue != nil }
        if targets.isEmpty {
            return FCMLookAlike.fcmError(400, "INVALID_ARGUMENT", "Recipient of the message is not set.")
        }
        if targets.count > 1 {
            let text =
                "Invalid JSON payload received. Oneof field 'target' is already set. Cannot set '\(targets[1])'"
            return FCMLookAlike.fcmError(400, "INVALID_ARGUMENT", text, fieldViolation: ("message", text))
        }
        if let token = message["token"]?.stringValue, !FCMLookAlike.isPlausibleDeviceToken(token) {
            return FCMLookAlike.fcmError(
                400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token",
                errorCode: "INVALID_ARGUMENT")
        }
        let android = message["android"]
        if let ttl = android?["ttl"]?.stringValue, let seconds = parseDuration(ttl),
            seconds < 0 || seconds > Double(FCMLookAlike.fcmMaximumTTLSeconds)
        {
            return FCMLookAlike.fcmError(
                400, "INVALID_ARGUMENT", "Invalid value at 'message.android.ttl': a TTL is 0 to 2419200 seconds",
                errorCode: "INVALID_ARGUMENT", fieldViolation: ("message.android.ttl", "TTL out of range"))
        }
        var payloadBytes = 0
        for data in [message["data"], android?["data"]] {
            for member in data?.members ?? [] {
                let key = member.key
                if key == "from" || key == "gcm" || key.hasPrefix("google") {
                    return FCMLookAlike.fcmError(
                        400, "INVALID_ARGUMENT", "Invalid data payload key: \(key)", errorCode: "INVALID_ARGUMENT",
                        fieldViolation: ("message.data", "Reserved key: \(key)"))
                }
                payloadBytes += key.utf8.count + (member.value.stringValue?.utf8.count ?? 0)
            }
        }
        for notification in [message["notification"], android?["notification"]] {
            for member in notification?.members ?? [] { payloadBytes += member.value.stringValue?.utf8.count ?? 0 }
        }
        if payloadBytes > FCMLookAlike.fcmPayloadLimit {
            return FCMLookAlike.fcmError(
                400, "INVALID_ARGUMENT", "Android message is too big", errorCode: "INVALID_ARGUMENT")
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}

extension LookAlikeConfiguration {
    /// A Google service account the FCM look-alike trusts: an assertion with `iss == clientEmail`
    /// and `kid == keyID` must be signed (RS256) by the private half of `publicKeyPEM`, and the
    /// access token it buys may send for `projectID` only.
    public struct FCMServiceAccount: Sendable, Codable, Equatable {
        /// `client_email` of the service-account JSON.
        public var clientEmail: String
        /// `private_key_id` of the service-account JSON (the assertion's `kid`).
        public var keyID: String
        /// The RSA public key as PEM (`-----BEGIN PUBLIC KEY-----`).
        public var publicKeyPEM: String
        /// `project_id`: the `{project}` of the send path.
        public var projectID: String

        public init(clientEmail: String, keyID: String, publicKeyPEM: String, projectID: String) {
            self.clientEmail = clientEmail
            self.keyID = keyID
            self.publicKeyPEM = publicKeyPEM
            self.projectID = projectID
        }
    }

    /// Google service accounts the FCM look-alike trusts (`POST /token`, then
    /// `POST /v1/projects/{projectID}/messages:send`).
    public var fcmServiceAccounts: [FCMServiceAccount] {
        get { lookAlikeList("fcmServiceAccounts", of: FCMServiceAccount.self) }
        set { setLookAlikeList("fcmServiceAccounts", newValue) }
    }
}

extension LookAlikeLocalSetup {
    /// A Google service account of project `tuisong-local` the FCM look-alike trusts (its public
    /// half); `fcmServiceAccountJSON(tokenURI:)` is the file a client loads.
    public var fcmServiceAccount: LookAlikeConfiguration.FCMServiceAccount {
        lookAlikeMaterial("fcmServiceAccount", as: LookAlikeConfiguration.FCMServiceAccount.self)
    }
    /// The service account's RSA 2048 private key (PKCS#8 PEM, `private_key` of the JSON).
    public var fcmPrivateKeyPEM: String { lookAlikeMaterial("fcmPrivateKeyPEM", as: String.self) }
    /// `client_id` of the service-account JSON (21 digits, as Google's).
    public var fcmClientID: String { lookAlikeMaterial("fcmClientID", as: String.self) }

    /// The service-account key file as Google's console downloads it, with `token_uri` pointing
    /// at the mock (e.g. `https://127.0.0.1:2197/token`), for any Google auth library to load.
    public func fcmServiceAccountJSON(tokenURI: String) -> [UInt8] {
        let email = fcmServiceAccount.clientEmail
        let escapedEmail = email.replacingOccurrences(of: "@", with: "%40")
        let fields: [(String, String)] = [
            ("type", "service_account"),
            ("project_id", fcmServiceAccount.projectID),
            ("private_key_id", fcmServiceAccount.keyID),
            ("private_key", fcmPrivateKeyPEM),
            ("client_email", email),
            ("client_id", fcmClientID),
            ("auth_uri", "https://accounts.google.com/o/oauth2/auth"),
            ("token_uri", tokenURI),
            ("auth_provider_x509_cert_url", "https://www.googleapis.com/oauth2/v1/certs"),
            ("client_x509_cert_url", "https://www.googleapis.com/robot/v1/metadata/x509/\(escapedEmail)"),
            ("universe_domain", "googleapis.com"),
        ]
        let lines = fields.map { "  \(RequestLogLine.quoted($0.0)): \(RequestLogLine.quoted($0.1))" }
        return Array(("{\n" + lines.joined(separator: ",\n") + "\n}\n").utf8)
    }
}

extension LookAlikeServer {
    /// Accepts assertions of this service account from now on (e.g. one a gateway stored after
    /// start). Throws when its public key PEM does not parse.
    public func trustFCMServiceAccount(_ account: LookAlikeConfiguration.FCMServiceAccount) throws {
        try (lookAlike(.fcm) as? FCMLookAlike)?.trust(account)
    }
}

extension AndroidMockStatistics {
    public var fcm: AndroidServiceStatistics {
        get { self[.fcm] }
        set { self[.fcm] = newValue }
    }
}
