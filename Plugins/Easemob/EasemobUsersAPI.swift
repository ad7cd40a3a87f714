import Foundation
import TuisongCore
import TuisongCrypto
import TuisongHTTP

/// PBKDF2 iterations for IM user passwords: app servers register users in batches of up to
/// 60, so the admin password's 600k would take seconds per batch; 50k keeps a batch under a
/// second while still costing a guesser ~50k hashes per try.
let easemobPasswordIterations = 50_000

extension EasemobProvider {
    // MARK: POST token

    func token(_ request: Request) async -> Response {
        await serve(request, resource: "/token", access: .open) { call in
            let body = try call.body()
            let grant = try body.requiredString("grant_type")
            let lifetime = try EasemobTTL.lifetime(try body.integer("ttl"))
            let issuedAt = Int64(call.now.timeIntervalSince1970.rounded(.down))
            let expiresAt = lifetime.map { issuedAt + $0 }
            let expiresIn = lifetime ?? EasemobTTL.neverSeconds
            let key = try await signingKey(appID: call.appID)
            switch grant {
            case "client_credentials":
                let clientID = try body.requiredString("client_id")
                let clientSecret = try body.requiredString("client_secret")
                guard Self.same(clientID, call.settings.clientID) else {
                    throw EasemobError.invalidGrant("client_id does not match")
                }
                guard Self.same(clientSecret, call.settings.clientSecret) else {
                    throw EasemobError.invalidGrant("client_secret does not match")
                }
                let token = EasemobToken.issue(
                    EasemobTokenClaims(appID: call.appID, principal: .app, issuedAt: issuedAt, expiresAt: expiresAt),
                    signingKey: key,
                    binding: EasemobToken.appBinding(
                        clientID: clientID, clientIDRotation: call.settings.clientIDRotation,
                        secretRotation: call.settings.clientSecretRotation))
                return EasemobReply.plain([
                    "access_token": .string(token), "expires_in": .int(expiresIn),
                    "application": .string(call.envelope.application),
                ])
            case "password":
                let username = try EasemobUsername.validated(try body.requiredString("username"))
                let password = try body.requiredString("password")
                // Per app and user, as the console's login per address: wrong passwords lock
                // the user out for growing delays, the right one included while locked.
                let throttleKey = "\(call.appID):\(username)"
                if let wait = passwordThrottle.waitTime(for: throttleKey) {
                    throw EasemobError.tooManyAttempts(seconds: wait)
                }
                let user = try await store.user(appID: call.appID, username: username)
                let hash = user?.passwordHash
                let matches = try await hashing { hash.map { PasswordHash.verify(password, against: $0) } ?? false }
                guard let user, let hash, matches else {
                    passwordThrottle.recordFailure(for: throttleKey)
                    if let wait = passwordThrottle.waitTime(for: throttleKey) {
                        throw EasemobError.tooManyAttempts(seconds: wait)
                    }
                    throw EasemobError.invalidGrant("invalid username or password")
                }
                passwordThrottle.recordSuccess(for: throttleKey)
                let token = EasemobToken.issue(
                    EasemobTokenClaims(
                        appID: call.appID, principal: .user(username), issuedAt: issuedAt, expiresAt: expiresAt),
                    signingKey: key,
                    binding: EasemobToken.userBinding(
                        passwordHash: hash, secretRotation: call.settings.clientSecretRotation))
                return EasemobReply.plain([
                    "access_token": .string(token), "expires_in": .int(expiresIn),
                    "application": .string(call.envelope.application),
                    "user": [
                        "uuid": .string(user.uuid), "type": "user", "created": .int(user.createdAt),
                        "modified": .int(user.modifiedAt), "username": .string(user.username), "activated": true,
                    ],
                ])
            default:
                throw EasemobError(
                    status: 400, error: "unsupported_grant_type",
                    "grant_type must be client_credentials or password, got \(grant.prefix(40))")
            }
        }
    }

    /// Compares secrets without stopping at the first difference.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Digest.sha256(Array(a.utf8))
        let y = Digest.sha256(Array(b.utf8))
        var difference: UInt8 = 0
        for (p, q) in zip(x, y) { difference |= p ^ q }
        return difference == 0
    }

    // MARK: Users

    func registerUsers(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let parsed = try EasemobBody(request.body)
            let objects: [EasemobObject]
            let single: Bool
            switch parsed.value {
            case .object:
                objects = [try parsed.object()]
                single = true
            case .array(let elements):
                guard !elements.isEmpty, elements.count <= 60 else {
                    throw EasemobError.illegalArgument("register 1 to 60 users per request")
                }
                objects = try elements.enumerated().map { index, element throws(EasemobError) in
                    guard case .object(let members) = element else {
                        throw EasemobError.illegalArgument("users[\(index)] must be an object")
                    }
                    return EasemobObject(members: members, path: "users[\(index)].")
                }
                single = false
            default:
                throw EasemobError.illegalArgument("the body must be a user object or a list of them")
            }
            var wanted: [(username: String, password: String?, nickname: String?)] = []
            for object in objects {
                guard let raw = try object.string("username") else {
                    throw EasemobError.illegalArgument("Entity user requires a property named username")
                }
                let username = try EasemobUsername.validated(raw)
                let password = try object.string("password")
                if let password, password.isEmpty || password.count > 64 {
                    throw EasemobError.illegalArgument("password or pin must provided (1–64 characters)")
                }
                let nickname = try object.string("nickname")
                if let nickname, nickname.count > 100 {
                    throw EasemobError.illegalArgument("nickname must be at most 100 characters")
                }
                wanted.append((username, password, nickname))
            }
            // Hashed on the compute pool, before any write: a batch of 60 is over a second of
            // CPU, which on a request thread or the cooperative pool would stall other requests.
            let batch = wanted
            let users = try await hashing {
                try batch.map { entry in
                    EasemobNewUser(
                        username: entry.username,
                        passwordHash: try entry.password.map {
                            try PasswordHash.make($0, iterations: easemobPasswordIterations)
                        },
                        nickname: entry.nickname)
                }
            }
            let (created, existing) = try await store.createUsers(appID: call.appID, users, now: call.now)
            if single, let name = existing.first { throw EasemobError.duplicateUser(name) }
            for user in created { try await accounts.createAccount(appID: call.appID, account: user.username) }
            var extra: [String: JSONValue] = [:]
            if !single {
                extra["data"] = .array(
                    existing.map {
                        ["username": .string($0), "registerUserFailReason": .string("the \($0) already exists")]
                    })
            }
            return call.success(entities: created.map(\.entity), extra: extra)
        }
    }

    func listUsers(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            var limit = 10
            if let text = request.query["limit"] {
                guard let value = Int(text), value >= 1 else {
                    throw EasemobError.illegalArgument("limit must be a number from 1 to 100")
                }
                limit = min(value, 100)
            }
            let page = try await store.users(appID: call.appID, cursor: request.query["cursor"], limit: limit)
            var extra: [String: JSONValue] = ["count": .int(Int64(page.users.count))]
            if let next = page.next { extra["cursor"] = .string(next) }
            var params: [String: JSONValue] = [:]
            for (name, value) in request.query { params[name] = [.string(value)] }
            if !params.isEmpty { extra["params"] = .object(params) }
            return call.success(entities: page.users.map(\.entity), extra: extra)
        }
    }

    func getUser(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let user = try await existingUser(call)
            return call.success(entities: [user.entity], extra: ["count": 1])
        }
    }

    func updateUser(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let username = try call.pathUser()
            let body = try call.body()
            var changes = EasemobUserChanges()
            if let nickname = try body.string("nickname") {
                guard nickname.count <= 100 else {
                    throw EasemobError.illegalArgument("nickname must be at most 100 characters")
                }
                changes.nickname = nickname
            }
            if let style = try body.integer("notification_display_style") {
                guard style == 0 || style == 1 else {
                    throw EasemobError.illegalArgument("notification_display_style must be 0 or 1")
                }
                changes.displayStyle = Int(style)
            }
            changes.noDisturbing = try body.bool("notification_no_disturbing")
            for (key, path) in [
                ("notification_no_disturbing_start", \EasemobUserChanges.noDisturbingStart),
                ("notification_no_disturbing_end", \EasemobUserChanges.noDisturbingEnd),
            ] {
                if let hour = try body.integer(key) {
                    guard (0...23).contains(hour) else { throw EasemobError.illegalArgument("\(key) must be 0–23") }
                    changes[keyPath: path] = Int(hour)
                }
            }
            guard let user = try await store.updateUser(appID: call.appID, username: username, changes, now: call.now)
            else { throw EasemobError.notFound() }
            return call.success(entities: [user.entity])
        }
    }

    /// `PUT users/{u}/password` `{"newpassword": "…"}`: the user's tokens are revoked.
    func setPassword(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let username = try call.pathUser()
            let password = try call.body().requiredString("newpassword")
            guard !password.isEmpty, password.count <= 64 else {
                throw EasemobError.illegalArgument("newpassword must be 1–64 characters")
            }
            let hash = try await hashing { try PasswordHash.make(password, iterations: easemobPasswordIterations) }
            guard try await store.setPassword(appID: call.appID, username: username, passwordHash: hash, now: call.now)
            else { throw EasemobError.notFound() }
            return EasemobReply.plain([
                "action": "set user password", "timestamp": .millis(call.now),
                "duration": .int(call.envelope.elapsedMillis),
            ])
        }
    }

    func deleteUser(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let username = try call.pathUser()
            guard let deleted = try await store.deleteUser(appID: call.appID, username: username) else {
                throw EasemobError.notFound()
            }
            let (user, bindings) = (deleted.user, deleted.bindings)
            // The account first: its devices' pushes not sent yet are cancelled as the deleted
            // account's (`account_deleted`), not as a logout's.
            _ = try await accounts.deleteAccount(appID: call.appID, account: username)
            for binding in bindings {
                if let token = DeviceToken(addressing: binding.deviceToken) {
                    _ = try await accounts.unbindDevice(appID: call.appID, token: token)
                }
            }
            return call.success(entities: [user.entity])
        }
    }

    func existingUser(_ call: Call) async throws -> EasemobUser {
        guard let user = try await store.user(appID: call.appID, username: try call.pathUser()) else {
            throw EasemobError.notFound()
        }
        return user
    }

    // MARK: Bindings and badges

    func bind(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .appOrSelf) { call in
            let user = try await existingUser(call)
            let body = try call.body()
            let deviceID = try body.requiredString("device_id")
            guard !deviceID.isEmpty, deviceID.utf8.count <= 128 else {
                throw EasemobError.illegalArgument("device_id must be 1–128 characters")
            }
            let notifier = try body.requiredString("notifier_name")
            guard notifier.utf8.count <= 128 else {
                throw EasemobError.illegalArgument("notifier_name must be at most 128 characters")
            }
            let rawToken = try body.string("device_token") ?? ""
            if rawToken.isEmpty {
                // Easemob's unbind: the same call with an empty token.
                if let old = try await store.unbind(appID: call.appID, username: user.username, deviceID: deviceID),
                    let token = DeviceToken(addressing: old)
                {
                    _ = try await accounts.unbindDevice(appID: call.appID, token: token)
                }
            } else {
                // The notifier name picks the device's service: a name one of the app's Android
                // credentials carries (FCM, Huawei, Honor, Xiaomi, OPPO, vivo) makes it an Android device of that
                // service; any other name (an APNs certificate's, or none yet) an iPhone.
                let channel =
                    notifier.isEmpty
                    ? PushChannel.apns : try await context.store.channel(appID: call.appID, selector: notifier) ?? .apns
                guard let token = DeviceToken(rawToken, channel: channel) else {
                    throw EasemobError.illegalArgument(
                        channel == .apns
                            ? "device_token must be an APNs device token (64–200 hex characters)"
                            : "device_token must be a \(channel) token (1–4096 letters, digits or -_.:~) for notifier_name \(notifier.prefix(64))"
                    )
                }
                let binding = EasemobBinding(deviceID: deviceID, deviceToken: token.value, notifierName: notifier)
                if let old = try await store.bind(appID: call.appID, username: user.username, binding, now: call.now),
                    let oldToken = DeviceToken(addressing: old)
                {
                    _ = try await accounts.unbindDevice(appID: call.appID, token: oldToken)
                }
                _ = try await accounts.bindDevice(
                    appID: call.appID, account: user.username,
                    // Easemob's binding names no environment: the notifier name's credential
                    // implies it (a selector only the other environment carries uses that one).
                    // Android devices have none (stored as production).
                    registration: DeviceRegistration(token: token, environment: .production, channel: channel),
                    credentialSelector: notifier.isEmpty ? nil : notifier)
                // A binding is a login: the offline messages are about to be fetched.
                try await accounts.setBadge(appID: call.appID, account: user.username, to: 0)
            }
            let bindings = try await store.bindings(appID: call.appID, username: user.username)
            return call.success(entities: bindings.map(\.entity))
        }
    }

    func bindings(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .appOrSelf) { call in
            let user = try await existingUser(call)
            let bindings = try await store.bindings(appID: call.appID, username: user.username)
            return call.success(entities: bindings.map(\.entity))
        }
    }

    func offlineCount(_ request: Request) async -> Response {
        await serve(request, resource: "/users", access: .app) { call in
            let user = try await existingUser(call)
            let count = try await accounts.badge(appID: call.appID, account: user.username)
            return call.success(entities: [], data: [user.username: .int(Int64(count))], extra: ["count": 0])
        }
    }
}

/// The APNs channel by the name its transport declares (a plugin links no transport).
extension PushChannel {
    fileprivate static let apns = PushChannel("apns")
}
