import Foundation
import Testing
import TuisongCore
import TuisongPluginTestKit

@testable import TencentProvider

extension TencentGatewayEndToEndTests {
    // MARK: Authentication and the calling convention

    @Test func userSigsAndTheCallingConvention() async throws {
        try await withGateway { gw in
            let body = #"{"UserID":"alice","Nick":"Alice"}"#
            let command = "im_open_login_svc/account_import"
            // Raw and percent-encoded sigs; the same random twice.
            _ = try await gw.ok(command, body)
            let sig = try gw.sig("administrator")
            let encoded = sig.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
            #expect(encoded != sig)
            #expect(try await gw.call(command, body, sig: encoded).errorCode == 0)
            #expect(try await gw.call(command, body, random: 99).errorCode == 0)
            // A JSON body with a Content-Type header is fine too.
            let typed = try await rawHTTP(
                port: gw.port, method: "POST",
                target:
                    "/v4/\(command)?sdkappid=\(Self.sdkAppID)&identifier=administrator&usersig=\(sig)&random=1&contenttype=json",
                body: Array(body.utf8), headers: ["Content-Type": "application/json"])
            #expect(typed.errorCode == 0)

            func code(_ response: TestResponse) -> Int? {
                #expect(response.status == 200 && response.actionStatus == "FAIL", "\(response.text)")
                return response.errorCode
            }
            let now = Int64(Date().timeIntervalSince1970)
            let wrongKey = try PythonUserSig.make(
                sdkAppID: Self.sdkAppID, key: "not-the-key", identifier: "administrator")
            #expect(code(try await gw.call(command, body, sig: wrongKey)) == 70009)
            #expect(code(try await gw.call(command, body, sig: "bm90LWEtc2ln")) == 70003)
            #expect(code(try await gw.call(command, body, sig: try gw.sig("alice"))) == 70013)
            let expired = try PythonUserSig.make(
                sdkAppID: Self.sdkAppID, key: Self.key, identifier: "administrator", time: now - 7200, expire: 3600)
            #expect(code(try await gw.call(command, body, sig: expired)) == 70001)
            #expect(code(try await gw.call(command, body, sdkAppID: 1_400_000_999)) == 60006)
            // A valid sig of a user on a server call.
            #expect(code(try await gw.call(command, body, as: "alice")) == 60010)
            // An unknown command still answers 200 with the envelope.
            #expect(code(try await gw.call("openim/nosuchcall", "{}")) == 60002)
        }
    }

    // MARK: Server API rows

    @Test func accountsProfilesAndErrorCodes() async throws {
        try await withGateway { gw in
            // account_import: UserID or the older Identifier, idempotent.
            _ = try await gw.ok("im_open_login_svc/account_import", #"{"UserID":"alice","Nick":"Alice"}"#)
            _ = try await gw.ok("im_open_login_svc/account_import", #"{"UserID":"alice","Nick":"Alice"}"#)
            _ = try await gw.ok("im_open_login_svc/account_import", #"{"Identifier":"bob"}"#)
            let bulk = try await gw.ok(
                "im_open_login_svc/multiaccount_import", #"{"Accounts":["carol","dave","bad id!"]}"#)
            #expect(bulk["FailAccounts"] as? [String] == ["bad id!"])

            // account_check arrives as a GET with a JSON body and no Content-Type.
            let check = try await gw.call(
                "im_open_login_svc/account_check", #"{"CheckItem":[{"UserID":"alice"},{"UserID":"zed"}]}"#,
                method: "GET")
            #expect(check.errorCode == 0)
            let items = try #require(check.jsonObject["ResultItem"] as? [[String: Any]])
            #expect(items.map { $0["AccountStatus"] as? String } == ["Imported", "NotImported"])
            #expect(items.map { $0["UserID"] as? String } == ["alice", "zed"])

            // portrait_set / portrait_get: the nick is the push prefix.
            _ = try await gw.ok(
                "profile/portrait_set",
                #"{"From_Account":"bob","ProfileItem":[{"Tag":"Tag_Profile_IM_Nick","Value":"小明"}]}"#)
            let profile = try await gw.ok(
                "profile/portrait_get", #"{"To_Account":["bob","alice"],"TagList":["Tag_Profile_IM_Nick"]}"#)
            let profiles = try #require(profile["UserProfileItem"] as? [[String: Any]])
            #expect(profiles.count == 2)
            let bobItems = try #require(profiles.first?["ProfileItem"] as? [[String: Any]])
            #expect(bobItems.first?["Tag"] as? String == "Tag_Profile_IM_Nick")
            #expect(bobItems.first?["Value"] as? String == "小明")
            #expect(profiles.first?["To_Account"] as? String == "bob" && profiles.first?["ResultCode"] as? Int == 0)

            // Message errors: each with nothing pushed and no message made.
            try await gw.setToken("bob", Self.token(7))
            try await gw.background("bob", unread: 0)
            let before = try await gw.messageCount()
            let text = #""MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"hi"}}]"#
            func code(_ command: String, _ body: String) async throws -> Int? {
                let response = try await gw.call(command, body)
                #expect(response.status == 200 && response.actionStatus == "FAIL", "\(response.text)")
                return response.errorCode
            }
            #expect(try await code("openim/sendmsg", #"{"To_Account":"bob","MsgRandom":1,"#) == 90001)
            #expect(try await code("openim/sendmsg", #"{"To_Account":"bob","MsgRandom":1,"MsgBody":{}}"#) == 90007)
            #expect(
                try await code(
                    "openim/sendmsg", #"{"To_Account":"bob","MsgRandom":1,"MsgBody":[{"MsgType":"TIMTextElem"}]}"#)
                    == 90002)
            #expect(try await code("openim/sendmsg", #"{"MsgRandom":1,\#(text)}"#) == 90003)
            #expect(try await code("openim/sendmsg", #"{"To_Account":5,"MsgRandom":1,\#(text)}"#) == 90003)
            #expect(try await code("openim/sendmsg", #"{"To_Account":"bob",\#(text)}"#) == 90005)
            #expect(try await code("openim/sendmsg", #"{"To_Account":"nobody","MsgRandom":1,\#(text)}"#) == 90012)
            #expect(
                try await code("openim/sendmsg", #"{"To_Account":"bob","MsgRandom":1,"MsgLifeTime":604801,\#(text)}"#)
                    == 90026)
            let targets = (0...500).map { "\"u\($0)\"" }.joined(separator: ",")
            #expect(
                try await code("openim/batchsendmsg", #"{"To_Account":[\#(targets)],"MsgRandom":1,\#(text)}"#) == 90011)
            let big = String(repeating: "长", count: 3000)
            #expect(
                try await code(
                    "openim/sendmsg",
                    #"{"To_Account":"bob","MsgRandom":1,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"\#(big)"}}]}"#
                ) == 93000)
            #expect(
                try await code("group_open_http_svc/send_group_msg", #"{"GroupId":"nope","Random":1,\#(text)}"#)
                    == 10010)
            #expect(try await gw.messageCount() == before)
            #expect(gw.mock.receivedNotifications().isEmpty)

            // batchsendmsg: unknown targets do not fail the rest.
            let batch = try await gw.ok(
                "openim/batchsendmsg", #"{"From_Account":"alice","To_Account":["bob","ghost"],"MsgRandom":2,\#(text)}"#)
            #expect((batch["ErrorList"] as? [[String: Any]])?.map { $0["To_Account"] as? String } == ["ghost"])
            #expect((batch["ErrorList"] as? [[String: Any]])?.first?["ErrorCode"] as? Int == 90012)
            _ = try await gw.completed(try #require(batch["MsgKey"] as? String))
            #expect(gw.payloads()[Self.token(7)] == #"{"aps":{"alert":"Alice:hi","badge":1}}"#)

            // account_delete: the account's devices stop receiving.
            let deleted = try await gw.ok(
                "im_open_login_svc/account_delete", #"{"DeleteItem":[{"UserID":"bob"},{"UserID":"zed"}]}"#)
            let results = try #require(deleted["ResultItem"] as? [[String: Any]])
            #expect(results.map { $0["UserID"] as? String } == ["bob", "zed"])
            #expect(results.first?["ResultCode"] as? Int == 0 && (results.last?["ResultCode"] as? Int ?? 0) != 0)
            #expect(try await code("openim/sendmsg", #"{"To_Account":"bob","MsgRandom":3,\#(text)}"#) == 90012)
            let check2 = try await gw.call(
                "im_open_login_svc/account_check", #"{"CheckItem":[{"UserID":"bob"}]}"#, method: "GET")
            #expect(
                (check2.jsonObject["ResultItem"] as? [[String: Any]])?.first?["AccountStatus"] as? String
                    == "NotImported")
            // Its device no longer receives a push to every account.
            gw.mock.resetRecorded()
            let everyone = try await gw.ok("all_member_push/im_push", #"{"MsgRandom":4,\#(text)}"#)
            let status = try await gw.completed(try #require(everyone["TaskId"] as? String))
            #expect(status.counts.delivered == 0 && gw.mock.receivedNotifications().isEmpty)
        }
    }

    // MARK: Groups

    @Test func sixThousandMemberGroup() async throws {
        try await withGateway { gw in
            let members = (0..<6_000).map { String(format: "m%05d", $0) }
            for start in stride(from: 0, to: members.count, by: 100) {
                let names = members[start..<start + 100].map { "\"\($0)\"" }.joined(separator: ",")
                _ = try await gw.ok("im_open_login_svc/multiaccount_import", #"{"Accounts":[\#(names)]}"#)
            }
            _ = try await gw.ok(
                "profile/portrait_set",
                #"{"From_Account":"m00001","ProfileItem":[{"Tag":"Tag_Profile_IM_Nick","Value":"Nick1"}]}"#)
            let created = try await gw.ok(
                "group_open_http_svc/create_group",
                #"{"Owner_Account":"m00000","Type":"Public","Name":"Team","MemberList":[{"Member_Account":"m00001"},{"Member_Account":"m00002","NameCard":"Card2"}]}"#
            )
            let groupID = try #require(created["GroupId"] as? String)
            #expect(groupID.hasPrefix("@TGS#"))
            for start in stride(from: 3, to: members.count, by: 500) {
                let names = members[start..<min(start + 500, members.count)].map { #"{"Member_Account":"\#($0)"}"# }
                let added = try await gw.ok(
                    "group_open_http_svc/add_group_member",
                    #"{"GroupId":"\#(groupID)","MemberList":[\#(names.joined(separator: ","))]}"#)
                #expect((added["MemberList"] as? [[String: Any]])?.allSatisfy { $0["Result"] as? Int == 1 } == true)
            }
            let again = try await gw.ok(
                "group_open_http_svc/add_group_member",
                #"{"GroupId":"\#(groupID)","MemberList":[{"Member_Account":"m00001"},{"Member_Account":"ghost"}]}"#)
            #expect((again["MemberList"] as? [[String: Any]])?.map { $0["Result"] as? Int } == [2, 0])
            let info = try await gw.ok("group_open_http_svc/get_group_info", #"{"GroupIdList":["\#(groupID)","nope"]}"#)
            let infos = try #require(info["GroupInfo"] as? [[String: Any]])
            #expect(infos.first?["MemberNum"] as? Int == 6_000 && infos.first?["Name"] as? String == "Team")
            #expect(infos.last?["ErrorCode"] as? Int == 10010)

            // Devices: 1 sender (Nick1), 2 Card2, 3 a NameCard set later, 4 foreground, 5 removed.
            for n in 1...5 {
                try await gw.setToken(members[n], Self.token(n))
                try await gw.background(members[n], unread: 10 * n)
            }
            _ = try await gw.ok("offline_push/report_foreground", "{}", as: members[4])
            let states = try await gw.ok("openim/querystate", #"{"To_Account":["m00004","m00003","m00009"]}"#)
            #expect(
                (states["QueryResult"] as? [[String: Any]])?.map { $0["State"] as? String } == [
                    "Online", "PushOnline", "Offline",
                ])
            _ = try await gw.ok(
                "group_open_http_svc/modify_group_member_info",
                #"{"GroupId":"\#(groupID)","Member_Account":"m00003","NameCard":"Three"}"#)
            _ = try await gw.ok(
                "group_open_http_svc/delete_group_member",
                #"{"GroupId":"\#(groupID)","MemberToDel_Account":["m00005"]}"#)

            func send(from sender: String) async throws -> MessageStatus {
                let sent = try await gw.ok(
                    "group_open_http_svc/send_group_msg",
                    #"{"GroupId":"\#(groupID)","From_Account":"\#(sender)","Random":8,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"开会"}}]}"#
                )
                let sequence = try #require(sent["MsgSeq"] as? Int)
                #expect(sent["MsgTime"] is Int)
                return try await gw.completed("\(groupID)#\(sequence)")
            }
            let first = try await send(from: "m00001")
            // 5,999 members: 2 and 3 pushed, 1 the sender, 4 foreground, the rest without devices.
            #expect(first.counts.delivered == 2 && first.counts.skipped == 2)
            #expect(try await gw.skipped(first) == [Self.token(1): "sender", Self.token(4): "foreground"])
            #expect(
                gw.payloads() == [
                    Self.token(2): #"{"aps":{"alert":"Nick1(Team):开会","badge":21}}"#,
                    Self.token(3): #"{"aps":{"alert":"Nick1(Team):开会","badge":31}}"#,
                ])
            gw.mock.resetRecorded()
            _ = try await send(from: "m00002")
            #expect(gw.payloads()[Self.token(1)] == #"{"aps":{"alert":"Card2(Team):开会","badge":11}}"#)
            gw.mock.resetRecorded()
            _ = try await send(from: "m00003")
            #expect(gw.payloads()[Self.token(2)] == #"{"aps":{"alert":"Three(Team):开会","badge":22}}"#)
            #expect(gw.payloads()[Self.token(5)] == nil)
        }
    }

    // MARK: all_member_push and account tags

    @Test func allMemberPushByTags() async throws {
        try await withGateway { gw in
            try await gw.importAccounts([("admin2", "运营"), ("u1", nil), ("u2", nil), ("u3", nil)])
            for n in 1...3 {
                try await gw.setToken("u\(n)", Self.token(n))
                try await gw.background("u\(n)", unread: 0)
            }
            _ = try await gw.ok(
                "all_member_push/im_set_tag",
                #"{"UserTags":[{"To_Account":"u1","Tags":["vip","bj"]},{"To_Account":"u2","Tags":["vip"]}]}"#)
            _ = try await gw.ok("all_member_push/im_remove_tag", #"{"UserTags":[{"To_Account":"u1","Tags":["bj"]}]}"#)
            let tags = try await gw.ok("all_member_push/im_get_tag", #"{"To_Account":["u1","u3"]}"#)
            #expect((tags["UserTags"] as? [[String: Any]])?.map { $0["Tags"] as? [String] } == [["vip"], []])

            let tagged = try await gw.ok(
                "all_member_push/im_push",
                #"{"From_Account":"admin2","MsgRandom":1,"Condition":{"TagsOr":["vip"]},"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"活动"}}]}"#
            )
            let taskID = try #require(tagged["TaskId"] as? String)
            #expect(try await gw.completed(taskID).counts.delivered == 2)
            #expect(
                gw.payloads() == [
                    Self.token(1): #"{"aps":{"alert":"运营:活动","badge":1}}"#,
                    Self.token(2): #"{"aps":{"alert":"运营:活动","badge":1}}"#,
                ])
            gw.mock.resetRecorded()
            let everyone = try await gw.ok(
                "all_member_push/im_push",
                #"{"MsgRandom":2,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"全员"}}]}"#)
            #expect(try await gw.completed(try #require(everyone["TaskId"] as? String)).counts.delivered == 3)
            #expect(gw.payloads()[Self.token(3)] == #"{"aps":{"alert":"全员","badge":1}}"#)
            let missing = try await gw.call("all_member_push/im_push", #"{"MsgBody":[]}"#)
            #expect(missing.errorCode == 90005)
        }
    }
}

extension TencentGatewayEndToEndTests {
    @Test func groupErrors() async throws {
        try await withGateway { gw in
            try await gw.importAccounts([("owner", nil), ("guest", nil)])
            func code(_ command: String, _ body: String) async throws -> Int? {
                let response = try await gw.call(command, body)
                #expect(response.status == 200 && response.actionStatus == "FAIL", "\(response.text)")
                return response.errorCode
            }
            let created = try await gw.ok(
                "group_open_http_svc/create_group",
                #"{"Owner_Account":"owner","Type":"Private","Name":"Pair","GroupId":"pair-1"}"#)
            #expect(created["GroupId"] as? String == "pair-1")
            #expect(
                try await code(
                    "group_open_http_svc/create_group",
                    #"{"Owner_Account":"owner","Type":"Private","Name":"P","GroupId":"pair-1"}"#)
                    == 10021)
            #expect(
                try await code(
                    "group_open_http_svc/create_group", #"{"Type":"Private","Name":"P","GroupId":"@TGS#mine"}"#)
                    == 10015)
            #expect(
                try await code(
                    "group_open_http_svc/create_group", #"{"Type":"Private","Name":"P","Owner_Account":"nobody"}"#)
                    == 10019)
            #expect(try await code("group_open_http_svc/create_group", #"{"Type":"Club","Name":"P"}"#) == 10004)
            #expect(
                try await code(
                    "group_open_http_svc/modify_group_member_info",
                    #"{"GroupId":"pair-1","Member_Account":"guest","NameCard":"G"}"#) == 10007)
            #expect(
                try await code(
                    "group_open_http_svc/add_group_member",
                    #"{"GroupId":"nope","MemberList":[{"Member_Account":"guest"}]}"#)
                    == 10010)
            #expect(
                try await code(
                    "group_open_http_svc/send_group_msg",
                    #"{"GroupId":"pair-1","From_Account":"guest","Random":1,"MsgBody":[{"MsgType":"TIMTextElem","MsgContent":{"Text":"x"}}]}"#
                ) == 10007)
            #expect(try await code("group_open_http_svc/get_group_info", #"{"GroupIdList":"pair-1"}"#) == 10004)
        }
    }
}
