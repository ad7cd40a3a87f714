import Foundation
import Testing
import TuisongCore

@testable import TuisongGateway

@Suite(.serialized) struct NativeDeviceAPITests {
    @Test func registerGetUpdateDelete() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let upper = token(1).uppercased()
        let url = "\(gw.baseURL)/api/v1/devices/\(upper)"

        let created = try await http(
            "PUT", url, key: key,
            json: ["environment": "production", "user": "u1", "locale": "zh-Hans", "tags": ["vip", "北京"]])
        #expect(created.status == 201)
        #expect(created.jsonObject["token"] as? String == token(1))
        #expect(created.jsonObject["tags"] as? [String] == ["vip", "北京"].sorted())
        #expect(created.jsonObject["invalidated_at"] is NSNull)

        let again = try await http("PUT", url, key: key, json: ["environment": "sandbox"])
        #expect(again.status == 200)
        #expect(again.jsonObject["environment"] as? String == "sandbox")
        #expect(again.jsonObject["user"] as? String == "u1", "fields left out keep their value")

        let fetched = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(token(1))", key: key)
        #expect(fetched.status == 200)
        #expect(fetched.jsonObject["locale"] as? String == "zh-Hans")
        #expect(
            fetched.jsonObject["tags"] as? [String] == ["vip", "北京"].sorted(), "tags come with the device in one read")

        // Issue #41 item 14: null detaches the user (a logout), an empty one is refused.
        let empty = try await http("PUT", url, key: key, json: ["user": ""])
        #expect(empty.status == 400 && empty.errorCode == "invalid_user")
        let detached = try await http("PUT", url, key: key, json: ["user": NSNull()])
        #expect(detached.status == 200)
        #expect(detached.jsonObject["user"] is NSNull)
        #expect(detached.jsonObject["locale"] as? String == "zh-Hans", "only the user is cleared")
        let reread = try await http("GET", url, key: key)
        #expect(reread.jsonObject["user"] is NSNull)
        let reattached = try await http("PUT", url, key: key, json: ["user": "u2"])
        #expect(reattached.jsonObject["user"] as? String == "u2")
        // A new device registered with no user says so, not "".
        let fresh = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(7))", key: key,
            json: ["environment": "production", "user": NSNull()])
        #expect(fresh.status == 201 && fresh.jsonObject["user"] is NSNull)

        let deleted = try await http("DELETE", url, key: key)
        #expect(deleted.status == 204)
        let gone = try await http("GET", url, key: key)
        #expect(gone.status == 404)
        #expect(gone.errorCode == "device_not_found")
    }

    @Test func androidDevicesCarryTheirChannel() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let fcm = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_Zz"
        let created = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(fcm)", key: key, json: ["channel": "fcm", "tags": ["vip"]])
        #expect(created.status == 201)
        #expect(created.jsonObject["channel"] as? String == "fcm")
        #expect(created.jsonObject["token"] as? String == fcm, "an Android token is kept as given")
        #expect(created.jsonObject["environment"] as? String == "production")
        let fetched = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(fcm)", key: key)
        #expect(fetched.jsonObject["channel"] as? String == "fcm")
        #expect(fetched.jsonObject["tags"] as? [String] == ["vip"])
        let apns = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(2))", key: key, json: ["environment": "sandbox"])
        #expect(apns.jsonObject["channel"] as? String == "apns")

        let wrongShape = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(3))", key: key, json: ["channel": "huawei"])
        #expect(wrongShape.status == 400)
        #expect(wrongShape.errorCode == "invalid_token", "an APNs token registered as Huawei is a client's mistake")
        let unknown = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(fcm)", key: key, json: ["channel": "blackberry"])
        #expect(unknown.status == 400)
        #expect(unknown.errorCode == "invalid_channel")
        // Any channel's device may be a test phone (issue #41).
        let sandbox = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(fcm)", key: key,
            json: ["channel": "fcm", "environment": "sandbox"])
        #expect(sandbox.status == 200 && sandbox.jsonObject["environment"] as? String == "sandbox", "\(sandbox.text)")
        let staging = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(fcm)", key: key, json: ["environment": "staging"])
        #expect(staging.errorCode == "invalid_environment")
        let noEnvironment = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token(4))", key: key, json: [:])
        #expect(noEnvironment.errorCode == "invalid_environment", "an APNs device still names its environment")
        let badToken = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/a%2Fb", key: key, json: ["channel": "fcm"])
        #expect(badToken.errorCode == "invalid_token")
    }

    @Test func partialUpdatesKeepChannelAndEnvironment() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let fcm = "dGVzdC1pbnN0YW5jZQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx1l8ELEtGjyL4UbCk7xMWIG_Zz"
        let fcmURL = "\(gw.baseURL)/api/v1/devices/\(fcm)"
        let apnsURL = "\(gw.baseURL)/api/v1/devices/\(token(1))"
        #expect(try await http("PUT", fcmURL, key: key, json: ["channel": "fcm", "user": "u-1"]).status == 201)
        #expect(try await http("PUT", apnsURL, key: key, json: ["environment": "sandbox"]).status == 201)

        let fcmUpdate = try await http("PUT", fcmURL, key: key, json: ["user": "u-2"])
        #expect(fcmUpdate.status == 200)
        #expect(fcmUpdate.jsonObject["channel"] as? String == "fcm", "the stored channel is kept")
        #expect(fcmUpdate.jsonObject["user"] as? String == "u-2")
        #expect(fcmUpdate.jsonObject["environment"] as? String == "production", "a new Android device's default")
        // An Android test phone stays one when it registers again without saying so, on its
        // service or moved to another.
        #expect(try await http("PUT", fcmURL, key: key, json: ["environment": "sandbox"]).status == 200)
        let testPhone = try await http("PUT", fcmURL, key: key, json: ["channel": "huawei", "user": "u-4"])
        #expect(testPhone.jsonObject["channel"] as? String == "huawei")
        #expect(testPhone.jsonObject["environment"] as? String == "sandbox", "the stored environment is kept")
        let apnsUpdate = try await http("PUT", apnsURL, key: key, json: ["user": "u-3"])
        #expect(apnsUpdate.status == 200)
        #expect(apnsUpdate.jsonObject["environment"] as? String == "sandbox", "the stored environment is kept")
        #expect(apnsUpdate.jsonObject["user"] as? String == "u-3")

        let newFCM = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(fcm)-new", key: key, json: ["user": "u"])
        #expect(newFCM.errorCode == "invalid_token")
        let message = newFCM.errorMessage ?? ""
        #expect(message.hasPrefix("an APNs device token must be hexadecimal"))
        #expect(message.contains("add \"channel\": \"fcm\""), "a new FCM-looking token is told how to name it")
        let wrongShape = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(token(3))", key: key, json: ["channel": "fcm"])
        #expect(wrongShape.errorMessage?.hasPrefix("an FCM device token must be") == true)

        let misspelt = try await http("PUT", apnsURL, key: key, json: ["tag": "vip"])
        #expect(misspelt.status == 400)
        #expect(misspelt.errorCode == "invalid_request")
        #expect(misspelt.errorMessage?.contains("\"tag\"") == true, "the unknown field is named")
        let fetched = try await http("GET", apnsURL, key: key)
        #expect(fetched.jsonObject["tags"] as? [String] == [], "a refused request changes nothing")
    }

    @Test func tagsAndPagination() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        for n in 1...25 {
            let r = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token(n))", key: key, json: ["environment": "production"])
            #expect(r.status == 201)
            let tagged = try await http(
                "PUT", "\(gw.baseURL)/api/v1/devices/\(token(n))/tags/%E5%8C%97%E4%BA%AC", key: key)
            #expect(tagged.status == 204)
        }
        let tags = try await http("GET", "\(gw.baseURL)/api/v1/devices/\(token(3))/tags", key: key)
        #expect(tags.jsonObject["tags"] as? [String] == ["北京"])

        var seen: [String] = []
        var cursor: String?
        repeat {
            var url = "\(gw.baseURL)/api/v1/tags/%E5%8C%97%E4%BA%AC/devices?limit=10"
            if let cursor { url += "&cursor=\(cursor)" }
            let page = try await http("GET", url, key: key)
            #expect(page.status == 200)
            let devices = page.jsonObject["devices"] as? [[String: Any]] ?? []
            seen += devices.compactMap { $0["token"] as? String }
            cursor = page.jsonObject["next_cursor"] as? String
        } while cursor != nil
        #expect(seen == (1...25).map { token($0) })

        let removed = try await http(
            "DELETE", "\(gw.baseURL)/api/v1/devices/\(token(3))/tags/%E5%8C%97%E4%BA%AC", key: key)
        #expect(removed.status == 204)
        let removedAgain = try await http(
            "DELETE", "\(gw.baseURL)/api/v1/devices/\(token(3))/tags/%E5%8C%97%E4%BA%AC", key: key)
        #expect(removedAgain.errorCode == "tag_not_found")
        let unknownDevice = try await http("PUT", "\(gw.baseURL)/api/v1/devices/\(token(99))/tags/vip", key: key)
        #expect(unknownDevice.status == 404)
        #expect(unknownDevice.errorCode == "device_not_found")
        let badCursor = try await http("GET", "\(gw.baseURL)/api/v1/tags/vip/devices?cursor=@@@", key: key)
        #expect(badCursor.status == 400)
        #expect(badCursor.errorCode == "invalid_cursor")
    }

    @Test func authentication() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let url = "\(gw.baseURL)/api/v1/devices/\(token(1))"
        let none = try await http("GET", url)
        #expect(none.status == 401)
        #expect(none.errorCode == "unauthorized")
        #expect(none.headers["www-authenticate"] == "Bearer")
        let unknown = try await http("GET", url, key: "tsk_" + String(repeating: "A", count: 43))
        #expect(unknown.status == 401)
        // Another app's key does not see this app's devices.
        _ = try await http("PUT", url, key: key, json: ["environment": "production"])
        let (_, otherKey) = try await gw.createApp(bundleID: "com.example.other")
        let other = try await http("GET", url, key: otherKey)
        #expect(other.status == 404)
        // The scheme is case-insensitive and blanks around the key are ignored; other schemes fail.
        let lowerCase = try await http("GET", url, headers: ["Authorization": "bearer \(key)"])
        #expect(lowerCase.status == 200)
        let padded = try await http("GET", url, headers: ["Authorization": "BEARER \t \(key)  "])
        #expect(padded.status == 200)
        let basic = try await http("GET", url, headers: ["Authorization": "Basic \(key)"])
        #expect(basic.status == 401)
        // A key that differs in one character is unknown, even right after the real one was cached.
        let altered = try await http("GET", url, key: String(key.dropLast()) + (key.last == "A" ? "B" : "A"))
        #expect(altered.status == 401)
    }

    @Test(
        arguments: [
            ("Bearer tsk_abc", "tsk_abc"), ("bearer tsk_abc", "tsk_abc"), ("BeArEr   tsk_abc \t", "tsk_abc"),
            ("Bearer ", ""), ("Bearer", nil), ("Bearertsk_abc", nil), ("Basic tsk_abc", nil), ("", nil),
            ("Béarer tsk_abc", nil),
        ] as [(String, String?)])
    func bearerKeyParsing(header: String, key: String?) {
        #expect(APIKeyAuthenticator.bearerKey(header) == key)
    }

    @Test func badInput() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (_, key) = try await gw.createApp()
        let url = "\(gw.baseURL)/api/v1/devices/\(token(1))"

        let malformed = try await http(
            "PUT", url, key: key, body: Data("{\"environment\": ".utf8), contentType: "application/json")
        #expect(malformed.status == 400)
        #expect(malformed.errorCode == "bad_request")

        let wrongType = try await http(
            "PUT", url, key: key, body: Data("environment=production".utf8),
            contentType: "application/x-www-form-urlencoded")
        #expect(wrongType.status == 415)

        let invalidUTF8 = try await http(
            "PUT", url, key: key, body: Data([0x7B, 0x22, 0xFF, 0xFE, 0x22, 0x7D]), contentType: "application/json")
        #expect(invalidUTF8.status == 400)

        let badEnvironment = try await http("PUT", url, key: key, json: ["environment": "staging"])
        #expect(badEnvironment.errorCode == "invalid_environment")

        let missingEnvironment = try await http("PUT", url, key: key, json: ["user": "x"])
        #expect(missingEnvironment.status == 400)

        let badToken = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/xyz", key: key, json: ["environment": "production"])
        #expect(badToken.errorCode == "invalid_token")
        let oddToken = try await http(
            "PUT", "\(gw.baseURL)/api/v1/devices/\(String(repeating: "a", count: 65))", key: key,
            json: ["environment": "production"])
        #expect(oddToken.errorCode == "invalid_token")

        let badTag = try await http("PUT", url, key: key, json: ["environment": "production", "tags": ["has space"]])
        #expect(badTag.errorCode == "invalid_tag")
        let longTag = try await http(
            "PUT", url, key: key, json: ["environment": "production", "tags": [String(repeating: "t", count: 200)]])
        #expect(longTag.errorCode == "invalid_tag")

        let oversized = try await http(
            "PUT", url, key: key, json: ["environment": "production", "user": String(repeating: "u", count: 100_000)])
        #expect(oversized.status == 413)

        let wrongMethod = try await http("POST", url, key: key, json: [:])
        #expect(wrongMethod.status == 405)
        #expect(wrongMethod.headers["allow"]?.contains("PUT") == true)

        let unknownPath = try await http("GET", "\(gw.baseURL)/api/v1/nothing-here", key: key)
        #expect(unknownPath.status == 404)

        // Nothing of the above left a device behind.
        #expect(try await gw.runtime.store.deviceCount(appID: 1) == 0)
    }

    @Test func concurrentRegistrationOfOneTokenIsIdempotent() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let (appID, key) = try await gw.createApp()
        let url = "\(gw.baseURL)/api/v1/devices/\(token(7))"
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<40 {
                group.addTask {
                    try await http("PUT", url, key: key, json: ["environment": "production", "user": "u\(i % 3)"])
                        .status
                }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.filter { $0 == 201 }.count == 1)
        #expect(statuses.filter { $0 == 200 }.count == 39)
        #expect(try await gw.runtime.store.deviceCount(appID: appID) == 1)
    }

    @Test func healthAndFirstStartFiles() async throws {
        let gw = try await TestGateway.start()
        defer { Task { await gw.stop() } }
        let health = try await http("GET", "\(gw.baseURL)/healthz")
        #expect(health.status == 200)
        #expect(health.jsonObject["database"] as? String == "ok")

        for file in ["master.key", "admin-password"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: gw.directory.appending(path: file).path)
            #expect((attributes[.posixPermissions] as? Int) == 0o600, "\(file) must be 0600")
        }
        guard case .generated = gw.runtime.adminPassword else {
            Issue.record("first start must generate an admin password")
            return
        }
        let password = try String(contentsOf: gw.directory.appending(path: "admin-password"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try await AdminPassword.verify(password, settings: gw.runtime.store))
        #expect(try await AdminPassword.verify("wrong", settings: gw.runtime.store) == false)
    }
}
