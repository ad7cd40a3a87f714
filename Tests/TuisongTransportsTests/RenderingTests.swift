import Foundation
import Testing
import TuisongCore
import TuisongDelivery
import TuisongTransportKit

@testable import TuisongFCM
@testable import TuisongHonor
@testable import TuisongHuawei

/// What each Android service is sent for a push, from its content and headers
/// (docs/reference/android.md): plain rendering, no sockets.
@Suite struct RenderingTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func object(_ bytes: [UInt8]) throws -> JSONValue {
        try JSONValue(parsing: bytes)
    }

    static let alert = PushContent(
        title: "Hi", body: "New message", bodyLocKey: "MSG", bodyLocArgs: ["Ann"], badge: 3, sound: "ping.caf",
        category: "OPEN_CHAT", thread: "chat-7", data: ["order": ["id": 42], "from_user": "ann"])

    @Test func fcmNotificationMessage() throws {
        let headers = PushHeaders(
            priority: .immediate, expiration: now.addingTimeInterval(3600), collapseID: "c-1")
        let body = FCMMessage.body(token: "tok:A-1", content: Self.alert, headers: headers, now: now)
        let message = try #require(try object(body)["message"])
        #expect(message["token"] == "tok:A-1")
        #expect(message["notification"] == ["title": "Hi", "body": "New message"])
        // Data values are strings: a nested object becomes its JSON text.
        #expect(message["data"] == ["order": #"{"id":42}"#, "from_user": "ann"])
        let android = try #require(message["android"])
        #expect(android["priority"] == "HIGH")
        #expect(android["ttl"] == "3600s")
        #expect(android["collapse_key"] == "c-1")
        #expect(
            android["notification"] == [
                "sound": "ping.caf", "click_action": "OPEN_CHAT", "notification_count": 3, "tag": "c-1",
                "body_loc_key": "MSG", "body_loc_args": ["Ann"],
            ])
        // The template gives the same bytes as a fresh rendering, token included.
        let template = FCMMessage.Template(content: Self.alert, headers: headers, now: now)
        #expect(template.body(token: "tok:A-1") == body)
    }

    @Test func fcmDataMessageIsNormalPriorityWithoutNotification() throws {
        let body = FCMMessage.body(
            token: "t", content: PushContent(data: ["k": "v"], background: true),
            headers: PushHeaders(pushType: .background), now: now)
        let message = try #require(try object(body)["message"])
        #expect(message["notification"] == nil)
        #expect(message["data"] == ["k": "v"])
        #expect(message["android"] == ["priority": "NORMAL"])
    }

    @Test func fcmPriorityFollowsAPNs() throws {
        let alert = PushContent(body: "x")
        #expect(FCMMessage.priority(PushHeaders(), alert) == "HIGH")
        #expect(FCMMessage.priority(PushHeaders(priority: .powerAware), alert) == "NORMAL")
        #expect(FCMMessage.priority(PushHeaders(priority: .low), alert) == "NORMAL")
    }

    @Test func huaweiBatchMessage() throws {
        let headers = PushHeaders(expiration: now.addingTimeInterval(60), collapseID: "c-1")
        let template = HuaweiMessage.Template(
            content: Self.alert, headers: headers, badgeClass: "com.example.Main", now: now)
        let root = try object(template.body(tokens: ["a", "b"]))
        #expect(root["validate_only"] == false)
        let message = try #require(root["message"])
        #expect(message["token"] == ["a", "b"])
        // Huawei's data is one string.
        #expect(message["data"] == .string(#"{"from_user":"ann","order":"{\"id\":42}"}"#))
        let android = try #require(message["android"])
        #expect(android["urgency"] == "HIGH")
        #expect(android["ttl"] == "60s")
        let notification = try #require(android["notification"])
        #expect(notification["title"] == "Hi")
        #expect(notification["body"] == "New message")
        #expect(notification["click_action"] == ["type": 1, "action": "OPEN_CHAT"])
        #expect(notification["importance"] == "NORMAL")
        #expect(notification["badge"] == ["set_num": 3, "class": "com.example.Main"])
        #expect(notification["sound"] == "ping.caf")
        #expect(notification["default_sound"] == false)
        #expect(notification["tag"] == "c-1")
        #expect(notification["group"] == "chat-7")
    }

    @Test func huaweiWithoutBadgeClassOrCategory() throws {
        let template = HuaweiMessage.Template(
            content: PushContent(body: "x", badge: 1, sound: "default"), headers: PushHeaders(),
            badgeClass: nil, now: now)
        let notification = try #require(
            try object(template.body(tokens: ["a"]))["message"]?["android"]?["notification"])
        #expect(notification["badge"] == nil)
        #expect(notification["click_action"] == ["type": 3])
        #expect(notification["default_sound"] == true)
    }

    @Test func honorMessageIsUnwrappedAndCamelCase() throws {
        let template = HonorMessage.Template(
            content: Self.alert, headers: PushHeaders(collapseID: "c-1"), badgeClass: "com.example.Main",
            now: now)
        let root = try object(template.body(tokens: ["a", "b"]))
        #expect(root["message"] == nil)
        #expect(root["token"] == ["a", "b"])
        #expect(root["data"] == .string(#"{"from_user":"ann","order":"{\"id\":42}"}"#))
        let notification = try #require(root["android"]?["notification"])
        #expect(notification["clickAction"] == ["type": 1, "action": "OPEN_CHAT"])
        #expect(notification["badge"] == ["setNum": 3, "badgeClass": "com.example.Main"])
        #expect(notification["tag"] == "c-1")
        // A data-only push with no custom keys is just its tokens.
        let empty = HonorMessage.Template(
            content: PushContent(background: true), headers: PushHeaders(), badgeClass: nil,
            now: now)
        #expect(String(decoding: empty.body(tokens: ["a"]), as: UTF8.self) == #"{"token":["a"]}"#)
    }
}

/// What each service's answers mean for the devices and the credential.
@Suite struct AnswerTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func fcmError(_ status: Int, _ statusName: String, _ code: String?, message: String = "m") -> [UInt8] {
        let details =
            code.map {
                #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"#
            } ?? ""
        return Array(
            #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(statusName)"\#(details)}}"#.utf8)
    }

    @Test func fcmAnswers() {
        #expect(
            FCMAnswer.read(
                status: 200, body: Array(#"{"name":"projects/p/messages/1"}"#.utf8), retryAfter: nil, now: now)
                == .delivered(messageName: "projects/p/messages/1"))
        #expect(
            FCMAnswer.read(status: 404, body: fcmError(404, "NOT_FOUND", "UNREGISTERED"), retryAfter: nil, now: now)
                == .outcome(.invalidate(.service("UNREGISTERED"), since: nil)))
        let badToken = fcmError(
            400, "INVALID_ARGUMENT", "INVALID_ARGUMENT",
            message: "The registration token is not a valid FCM registration token")
        #expect(
            FCMAnswer.read(status: 400, body: badToken, retryAfter: nil, now: now)
                == .outcome(.invalidate(.service("INVALID_ARGUMENT"), since: nil)))
        let badField = fcmError(400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", message: "Invalid value at 'message.data'")
        #expect(
            FCMAnswer.read(status: 400, body: badField, retryAfter: nil, now: now)
                == .outcome(.failed(.service("INVALID_ARGUMENT"))))
        #expect(
            FCMAnswer.read(
                status: 429, body: fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), retryAfter: "7", now: now)
                == .outcome(.retry(.service("QUOTA_EXCEEDED"), after: .seconds(7))))
        #expect(
            FCMAnswer.read(
                status: 429, body: fcmError(429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED"), retryAfter: nil, now: now)
                == .outcome(.retry(.service("QUOTA_EXCEEDED"), after: .seconds(60))))
        #expect(
            FCMAnswer.read(
                status: 503, body: fcmError(503, "UNAVAILABLE", "UNAVAILABLE"),
                retryAfter: "Fri, 15 Jan 2027 08:00:10 GMT", now: Date(timeIntervalSince1970: 1_800_000_000))
                != .outcome(.failed(.service("UNAVAILABLE"))))
        #expect(
            FCMAnswer.read(status: 500, body: fcmError(500, "INTERNAL", "INTERNAL"), retryAfter: nil, now: now)
                == .outcome(.retry(.service("INTERNAL"), after: nil)))
        #expect(
            FCMAnswer.read(status: 401, body: fcmError(401, "UNAUTHENTICATED", nil), retryAfter: nil, now: now)
                == .refreshAuth(.service("UNAUTHENTICATED")))
        #expect(
            FCMAnswer.read(status: 403, body: fcmError(403, "PERMISSION_DENIED", nil), retryAfter: nil, now: now)
                == .credentialRefused(.service("PERMISSION_DENIED")))
        #expect(
            FCMAnswer.read(
                status: 403, body: fcmError(403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH"), retryAfter: nil, now: now)
                == .outcome(.failed(.service("SENDER_ID_MISMATCH"))))
        #expect(
            FCMAnswer.read(status: 502, body: Array("<html>".utf8), retryAfter: nil, now: now)
                == .outcome(.retry(.service("HTTP502"), after: nil)))
    }

    @Test func fcmSuccessNameReadWithOrWithoutTheJSONParser() {
        // The shapes the fast path reads: compact (the look-alike's) and pretty-printed (FCM's).
        #expect(
            FCMAnswer.plainMessageName(Array(#"{"name":"projects/p/messages/0:1%ab"}"#.utf8))
                == "projects/p/messages/0:1%ab")
        #expect(
            FCMAnswer.plainMessageName(Array("{\n  \"name\": \"projects/p/messages/2\"\n}\n".utf8))
                == "projects/p/messages/2")
        // Anything else is left to the parser, with the same answer as before.
        for body in [
            #"{"name":"projects/p/messages/\u0033"}"#, #"{"name":"projects/p/messages/é"}"#,
            #"{"name":"a","extra":1}"#, #"{"other":"a"}"#, #"{"name":"a"} x"#, #"{"name":"a""#, "", "{}",
            #"{"name":7}"#,
        ] {
            #expect(FCMAnswer.plainMessageName(Array(body.utf8)) == nil, "\(body)")
            #expect(
                FCMAnswer.read(status: 200, body: Array(body.utf8), retryAfter: nil, now: now)
                    == .delivered(messageName: (try? JSONValue(parsing: Array(body.utf8)))?["name"]?.stringValue))
        }
        #expect(
            FCMAnswer.read(
                status: 200, body: Array(#"{"name":"projects/p/messages/\u0033"}"#.utf8), retryAfter: nil, now: now)
                == .delivered(messageName: "projects/p/messages/3"))
    }

    @Test func retryAfterTakesSecondsOrADate() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)  // Fri, 15 Jan 2027 08:00:00 GMT
        #expect(RetryAfter.parse("120", now: now) == .seconds(120))
        #expect(RetryAfter.parse("Fri, 15 Jan 2027 08:00:30 GMT", now: now) == .seconds(30))
        #expect(RetryAfter.parse("soon", now: now) == nil)
        #expect(RetryAfter.parse(nil, now: now) == nil)
    }

    @Test func huaweiAnswers() {
        func read(_ status: Int, _ json: String, tokens: [String] = ["a", "b"]) -> TokenBatchAnswer {
            HuaweiAnswer.read(status: status, body: Array(json.utf8), tokens: tokens, retryAfter: nil, now: now)
        }
        #expect(
            read(200, #"{"code":"80000000","msg":"Success","requestId":"r1"}"#)
                == .outcomes([.delivered(serviceMessageID: "r1"), .delivered(serviceMessageID: "r1")]))
        let partial =
            #"{"code":"80100000","msg":"{\"success\":1,\"failure\":1,\"illegal_tokens\":[\"b\"]}","requestId":"r2"}"#
        #expect(
            read(200, partial)
                == .outcomes([.delivered(serviceMessageID: "r2"), .invalidate(.service("80300007"), since: nil)]))
        #expect(
            read(400, #"{"code":"80300007","msg":"All the tokens are invalid"}"#)
                == .outcomes(Array(repeating: .invalidate(.service("80300007"), since: nil), count: 2)))
        #expect(read(401, #"{"code":"80200003","msg":"OAuth token expired."}"#) == .refreshAuth(.service("80200003")))
        #expect(
            read(401, #"{"code":"80200001","msg":"Oauth Authentication error"}"#) == .refreshAuth(.service("80200001")))
        #expect(read(403, #"{"code":"80300002","msg":"No permission"}"#) == .credentialRefused(.service("80300002")))
        #expect(
            read(500, #"{"code":"81000001","msg":"internal error"}"#)
                == .outcomes(Array(repeating: .retry(.service("81000001"), after: nil), count: 2)))
        #expect(
            read(400, #"{"code":"80100003","msg":"Incorrect message structure"}"#)
                == .outcomes(Array(repeating: .failed(.service("80100003")), count: 2)))
        #expect(
            read(503, "busy")
                == .outcomes(Array(repeating: .retry(.service("HTTP503"), after: nil), count: 2)))
    }

    @Test func honorAnswers() {
        func read(_ status: Int, _ json: String, tokens: [String] = ["a", "b", "c"]) -> TokenBatchAnswer {
            HonorAnswer.read(status: status, body: Array(json.utf8), tokens: tokens, retryAfter: nil, now: now)
        }
        let mixed =
            #"{"code":200,"message":"success","data":{"sendResult":true,"requestId":"r","failTokens":["b"],"expireTokens":["c"]}}"#
        #expect(
            read(200, mixed)
                == .outcomes([
                    .delivered(serviceMessageID: "r"), .invalidate(.service("FailedToken"), since: nil),
                    .invalidate(.service("ExpiredToken"), since: nil),
                ]))
        #expect(read(401, #"{"code":80200003,"message":"token expired"}"#) == .refreshAuth(.service("80200003")))
        #expect(
            read(200, #"{"code":80300007,"message":"all invalid"}"#)
                == .outcomes(Array(repeating: .invalidate(.service("80300007"), since: nil), count: 3)))
        #expect(
            read(500, #"{"code":81000001,"message":"internal"}"#)
                == .outcomes(Array(repeating: .retry(.service("81000001"), after: nil), count: 3)))
    }

    @Test func oauthTokenAnswers() {
        let issued = OAuthTokenAnswer.read(
            status: 200, body: Array(#"{"access_token":"at","expires_in":3599,"token_type":"Bearer"}"#.utf8),
            retryAfter: nil, now: now)
        #expect(issued == .success(AccessToken(value: "at", expires: now.addingTimeInterval(3599))))
        #expect(
            OAuthTokenAnswer.read(
                status: 400,
                body: Array(#"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#.utf8),
                retryAfter: nil, now: now) == .failure(.refused(.service("invalid_grant"))))
        // Huawei's error is a number.
        #expect(
            OAuthTokenAnswer.read(
                status: 400, body: Array(#"{"error":1101,"sub_error":12304,"error_description":"x"}"#.utf8),
                retryAfter: nil, now: now) == .failure(.refused(.service("1101"))))
        #expect(
            OAuthTokenAnswer.read(status: 503, body: [], retryAfter: "5", now: now)
                == .failure(.unavailable(.service("HTTP503"), retryAfter: .seconds(5))))
    }
}
