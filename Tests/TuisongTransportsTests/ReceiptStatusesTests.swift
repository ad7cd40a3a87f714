import Foundation
import Testing
import TuisongCore
import TuisongLookAlikeKit
import TuisongTransportKit

@testable import TuisongHarmony
@testable import TuisongHuawei

/// Huawei's and HarmonyOS's `{"statuses":[…]}` read straight into receipts (`ReceiptStatuses`,
/// no tree per status) give what reading the body whole did: the same receipts, or the same
/// refusal, for the services' bodies and for the odd ones (duplicate keys, wrong types, a fault
/// after an incomplete status).
@Suite struct ReceiptStatusesTests {
    /// How the receipts were read before: the body parsed whole, each status from its tree.
    static func huaweiAsATree(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        guard let json = try? JSONValue(parsing: body), let statuses = json["statuses"]?.arrayValue else {
            throw ReceiptFormatError("the body is not {\"statuses\":[…]}")
        }
        var receipts: [ServiceReceipt] = []
        for status in statuses {
            guard let token = status["token"]?.stringValue, !token.isEmpty,
                let code = status["status"]?.intValue ?? status["status"]?.stringValue.flatMap({ Int64($0) })
            else {
                throw ReceiptFormatError("a status without its token or status")
            }
            let at = (status["timestamp"]?.intValue).map { Date(timeIntervalSince1970: Double($0) / 1000) }
            receipts.append(
                ServiceReceipt(
                    tag: status["biTag"]?.stringValue ?? "", token: token, outcome: HuaweiReceipts.outcome(code),
                    at: at))
        }
        return receipts
    }

    static func harmonyAsATree(_ body: [UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt] {
        guard let json = try? JSONValue(parsing: body), let statuses = json["statuses"]?.arrayValue else {
            throw ReceiptFormatError("the body is not {\"statuses\":[…]}")
        }
        var receipts: [ServiceReceipt] = []
        for status in statuses {
            guard let token = status["token"]?.stringValue, !token.isEmpty,
                let delivery = status["deliveryStatus"] ?? status["formStatus"],
                let code = delivery["result"]?.intValue ?? delivery["result"]?.stringValue.flatMap({ Int64($0) })
            else {
                throw ReceiptFormatError("a status without its token or deliveryStatus.result")
            }
            let at = (delivery["timestamp"]?.intValue).map { Date(timeIntervalSince1970: Double($0) / 1000) }
            receipts.append(
                ServiceReceipt(
                    tag: status["biTag"]?.stringValue ?? "", token: token, outcome: HarmonyReceipts.outcome(code),
                    at: at))
        }
        return receipts
    }

    /// The receipts, or the refusal's message.
    static func outcome(_ read: ([UInt8]) throws(ReceiptFormatError) -> [ServiceReceipt], _ body: String) -> String {
        do {
            return "\(try read(Array(body.utf8)))"
        } catch {
            return "refused: \(error.message)"
        }
    }

    static let huaweiBodies = [
        #"{"statuses":[{"biTag":"42.abc","appid":"10086","token":"tok1","status":0,"timestamp":1750000000123,"requestId":"r1"},{"biTag":"42.abc","appid":"10086","token":"tok2","status":6,"timestamp":1750000000124,"requestId":"r1"}]}"#,
        #"{"statuses":[]}"#,
        #" { "statuses" : [ { "token" : "a\"b\u00e9" , "status" : "201" } ] } "#,
        #"{"statuses":[{"token":"t","status":0,"biTag":1,"timestamp":"1750000000123"}]}"#,
        #"{"statuses":[{"token":"t","status":0.0,"timestamp":1.5e12}]}"#,
        #"{"statuses":[{"token":"t","status":1.5}]}"#,
        #"{"statuses":[{"token":"","status":0}]}"#,
        #"{"statuses":[{"token":7,"status":0}]}"#,
        #"{"statuses":[{"token":"t"}]}"#,
        #"{"statuses":[{"token":"t","status":null}]}"#,
        #"{"statuses":[{"token":"t","status":0,"token":5}]}"#,
        #"{"statuses":[{"token":5,"status":0,"token":"t"}]}"#,
        #"{"statuses":[1,{"token":"t","status":0}]}"#,
        #"{"statuses":[{"token":"t","status":0,"extra":{"deep":[1,{"x":"\ud83d\ude00"}]}}]}"#,
        #"{"statuses":[{"token":"t"}],"statuses":[{"token":"u","status":2}]}"#,
        #"{"statuses":[{"token":"u","status":2}],"statuses":{}}"#,
        #"{"statuses":[{"token":"u","status":2}],"statuses":null}"#,
        #"{"statuses":{}}"#,
        #"{"other":[]}"#,
        #"[{"statuses":[]}]"#,
        #""statuses""#,
        #"{"statuses":[{"token":"t"}],"broken":}"#,
        #"{"statuses":[{"token":"t"},{"token":"u","status":0,"x":"\q"}]}"#,
        #"{"statuses":[{"token":"t","status":0}]} trailing"#,
        #"{"statuses":[{"token":"t","status":0,"skipped":"\u0000"}]}"#,
        "{\"statuses\":[{\"token\":\"t\",\"status\":0,\"appid\":\"\u{1}\"}]}",
        "",
    ]

    @Test func huaweiReadsAsTheWholeTreeDid() {
        for body in Self.huaweiBodies {
            #expect(
                Self.outcome(HuaweiReceipts.parse, body) == Self.outcome(Self.huaweiAsATree, body), "\(body)")
        }
        #expect(Self.outcome(HuaweiReceipts.parse, Self.huaweiBodies[0]).contains("tok2"))
        #expect(Self.outcome(HuaweiReceipts.parse, #"{"statuses":[{"token":"t"}],"broken":}"#).contains("not {"))
    }

    @Test func invalidUTF8InAFieldNobodyReadsStillRefusesTheBody() {
        let body =
            Array(#"{"statuses":[{"token":"t","status":0,"requestId":""#.utf8) + [0xC0, 0x80] + Array(#""}]}"#.utf8)
        #expect(throws: ReceiptFormatError.self) { try HuaweiReceipts.parse(body) }
        #expect(throws: ReceiptFormatError.self) { try Self.huaweiAsATree(body) }
    }

    static let harmonyBodies = [
        #"{"statuses":[{"token":"h1","pushType":0,"appPackageName":"com.example","biTag":"42.abc","requestId":"r","deliveryStatus":{"result":0,"timestamp":1750000000123}}]}"#,
        #"{"statuses":[{"token":"h1","formStatus":{"formId":7,"result":"0","timestamp":1750000000123}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":{"timestamp":1},"formStatus":{"result":0}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":null,"formStatus":{"result":0}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":5}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":{"result":0},"deliveryStatus":{"result":15}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":{"result":0,"result":null}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":{"result":102,"timestamp":"1750000000123"}}]}"#,
        #"{"statuses":[{"token":"h1"}]}"#,
        #"{"statuses":[{"deliveryStatus":{"result":0}}]}"#,
        #"{"statuses":[{"token":"h1","deliveryStatus":{"result":0,"x":[}}]}"#,
        #"{"statuses":"x"}"#,
    ]

    @Test func harmonyReadsAsTheWholeTreeDid() {
        for body in Self.harmonyBodies {
            #expect(
                Self.outcome(HarmonyReceipts.parse, body) == Self.outcome(Self.harmonyAsATree, body), "\(body)")
        }
        #expect(Self.outcome(HarmonyReceipts.parse, Self.harmonyBodies[5]).contains("replaced"))
    }

    /// The check a signed POST gets before its answer (`ReceiptStatuses.count`, no value read)
    /// refuses the bodies `read` refuses as not `{"statuses":[…]}` for their structure, and for
    /// every body `read` takes it counts the statuses `read` gives; what it lets through that
    /// `read` refuses is a value's spelling or a status's content (the digest's `unreadable`).
    @Test func theIntakeCheckCountsWhatReadTakesAndRefusesWhatIsNotStatuses() {
        for (body, parse) in Self.huaweiBodies.map({ ($0, HuaweiReceipts.parse) })
            + Self.harmonyBodies.map({ ($0, HarmonyReceipts.parse) })
        {
            let checked: Int? = try? ReceiptStatuses.count(Array(body.utf8))
            do {
                let receipts = try parse(Array(body.utf8))
                #expect(checked == receipts.count, "\(body)")
            } catch {
                // An escape is a value's spelling (`\q`, `\u0000` refused by `read`), which the
                // check does not read.
                if error.message == ReceiptStatuses.notStatuses.message, !body.contains(#"\"#) {
                    #expect(checked == nil, "\(body)")
                }
            }
        }
        let structural = [
            #"{"statuses":[{"token":"t","status":0}"#, #"{"statuses":[{"token":"t","status":0}]]}"#,
            #"{"statuses":[{"token":"t,"status":0}]}"#, #"{"statuses":[{"token":"t" "status":0}]}"#,
            #"{"statuses":[{"token":"t","status":0},]}"#, #"{"statuses":[,{"token":"t"}]}"#,
            #"{"statuses":[{"token":"t",}]}"#, #"{"statuses":[{"token"}]}"#, #"{"statuses":[{:0}]}"#,
            #"{"statuses" [] }"#, #"{"statuses":[]}{}"#, #"{"statuses":[]},"#, "{\"statuses\":[\"\u{1F}\"]}",
            #"{"statuses":[{"token":"t","status":0}],"x":}"#, #"{"statuses":[}"#, "{", "}", "[]", "",
            #"{"statuses":["# + String(repeating: "[", count: 100) + String(repeating: "]", count: 100) + "]}",
        ]
        for body in structural {
            #expect(throws: ReceiptFormatError.self, "\(body)") { try ReceiptStatuses.count(Array(body.utf8)) }
            #expect(throws: ReceiptFormatError.self, "\(body)") { try HuaweiReceipts.parse(Array(body.utf8)) }
        }
        // Counted, not read: elements of any kind at the array's own level, the last `statuses`.
        let counts = [
            #"{"statuses":[]}"#: 0,
            #" {"a":{"statuses":[1]}, "statuses" : [ 1 , "x" , {"s":[[],{}]} , [ ] , null ] } "#: 5,
            #"{"statuses":[1,2],"statuses":[3]}"#: 1, #"{"statuses":[{"token":"a\"]","status":0}]}"#: 1,
            #"{"statuses":[tru,1e,--]}"#: 3,
        ]
        for (body, count) in counts {
            #expect((try? ReceiptStatuses.count(Array(body.utf8))) == count, "\(body)")
        }
        // The look-alike's 1,000-status body, as Huawei posts it.
        let template: [String: JSONValue] = ["biTag": "42.abc", "appid": "10086", "status": 0, "requestId": "r1"]
        let body = LookAlikeReceipts.statusesBody((0..<1000).map { "token-\($0)" }, template: template)
        #expect((try? ReceiptStatuses.count(body)) == 1000)
    }

    /// Long strings are scanned sixteen bytes at a time: a quote, an escape or a control
    /// character is found wherever it falls in or across those sixteen.
    @Test func theIntakeCheckFindsEveryStringsEndWhereverItFalls() {
        for length in 0..<50 {
            let plain = String(repeating: "a", count: length)
            #expect((try? ReceiptStatuses.count(Array(#"{"statuses":["\#(plain)"]}"#.utf8))) == 1, "\(length)")
            #expect(throws: ReceiptFormatError.self) {
                try ReceiptStatuses.count(Array(#"{"statuses":["\#(plain)]}"#.utf8))
            }
            for at in 0...length {
                let before = String(repeating: "b", count: at)
                let after = String(repeating: "c", count: length - at)
                // An escaped quote does not end the string; a raw control character refuses it.
                let escaped = #"{"statuses":["\#(before)\"\#(after)",1]}"#
                #expect((try? ReceiptStatuses.count(Array(escaped.utf8))) == 2, "\(escaped)")
                let control = "{\"statuses\":[\"\(before)\u{1}\(after)\"]}"
                #expect(throws: ReceiptFormatError.self, "\(at)") { try ReceiptStatuses.count(Array(control.utf8)) }
                // A quote in the middle ends the string there: what follows is not a member.
                let cut = #"{"statuses":["\#(before)"\#(after)x"]}"#
                #expect(throws: ReceiptFormatError.self, "\(cut)") { try ReceiptStatuses.count(Array(cut.utf8)) }
            }
        }
    }

    /// The look-alikes write their receipt bodies from one serialized status per POST, the
    /// token written into each copy: the same JSON as writing every status whole.
    @Test func theLookAlikesBodyIsEveryStatusWithItsToken() throws {
        let template: [String: JSONValue] = [
            "biTag": "42.abc", "appid": "10086", "status": 0, "timestamp": 1_750_000_000_123, "requestId": "r1",
        ]
        let tokens = ["tok1", #"quote"and\back"#, "好", "tab\there"]
        let body = LookAlikeReceipts.statusesBody(tokens, template: template)
        let expected: JSONValue = [
            "statuses": .array(tokens.map { token in .object(template.merging(["token": .string(token)]) { $1 }) })
        ]
        #expect(try JSONValue(parsing: body) == expected)
        #expect(try HuaweiReceipts.parse(body).map(\.token) == tokens)
        #expect(
            try JSONValue(parsing: LookAlikeReceipts.statusesBody([String](), template: template)) == ["statuses": []])
    }
}
