import Foundation
import Testing

@testable import TuisongCore

@Suite struct JSONValueSerializationTests {
    @Test func sortedKeysAndMinimalEscaping() {
        let value: JSONValue = [
            "b": 1, "a": [true, false, nil], "B": "x", "中": "推送", "aa": ["z": -7, "y": 0.5],
            "esc": .string("q\"b\\s/n\nt\tc\u{01}\u{1f} é 😀"),
        ]
        #expect(
            value.serializedString
                == #"{"B":"x","a":[true,false,null],"aa":{"y":0.5,"z":-7},"b":1,"esc":"q\"b\\s/n\nt\tc\u0001\u001f é 😀","中":"推送"}"#
        )
        // Non-ASCII stays UTF-8 bytes, not \u escapes.
        #expect(JSONValue.string("好").serialized() == [0x22, 0xE5, 0xA5, 0xBD, 0x22])
    }

    @Test func numbers() {
        #expect(JSONValue.int(Int64.max).serializedString == "9223372036854775807")
        #expect(JSONValue.int(-42).serializedString == "-42")
        #expect(JSONValue.double(1.0).serializedString == "1")
        #expect(JSONValue.double(-0.0).serializedString == "0")
        #expect(JSONValue.double(0.1).serializedString == "0.1")
        #expect(JSONValue.double(1e-7).serializedString == "1e-07")
        #expect(JSONValue.double(1e300).serializedString == "1e+300")
        #expect(JSONValue.double(.nan).serializedString == "null")
        #expect(JSONValue.double(.infinity).serializedString == "null")
        // Every double form we write is JSON that reads back to the same number.
        for number in [0.1, 1e-7, 1e300, 123.456, -2.5e-10, 9_007_199_254_740_993.0] {
            let text = JSONValue.double(number).serialized()
            #expect((try? JSONValue(parsing: text))?.doubleValue == number)
        }
    }

    @Test func deterministicWhateverTheInsertionOrder() {
        var first: [String: JSONValue] = [:]
        var second: [String: JSONValue] = [:]
        let keys = (0..<50).map { "key\($0)" }
        for key in keys { first[key] = .string(key) }
        for key in keys.reversed() { second[key] = .string(key) }
        #expect(JSONValue.object(first).serialized() == JSONValue.object(second).serialized())
    }

    @Test func readableByJSONSerialization() throws {
        let value: JSONValue = ["list": [1, 2.5, "three", nil, ["deep": true]], "text": "line\nbreak \"quoted\" 中文"]
        let object = try JSONSerialization.jsonObject(with: Data(value.serialized()))
        #expect(JSONValue(jsonObject: object) == value)
    }
}

@Suite struct JSONValueParsingTests {
    @Test func parsesEveryKind() throws {
        let parsed = try JSONValue(
            parsing:
                #" { "a" : [ 1 , -0 , 2.5 , 1e2 , -3E-2 , true , false , null ] , "s" : "x\u00e9\ud83d\ude00\/\n" } "#)
        #expect(parsed["a"] == [.int(1), .int(0), .double(2.5), .double(100), .double(-0.03), true, false, nil])
        #expect(parsed["s"] == "xé😀/\n")
        #expect(parsed["a"]?[0]?.intValue == 1)
        #expect(parsed["a"]?[2]?.intValue == nil)
        #expect(parsed["a"]?[3]?.intValue == 100)
        #expect(parsed["a"]?[99] == nil)
        #expect(parsed["missing"] == nil)
        #expect(parsed["s"]?["not an object"] == nil)
        #expect(try JSONValue(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue(parsing: "{\"k\":1,\"k\":2}") == ["k": 2])
        #expect(try JSONValue(parsing: "[]") == .array([]))
        #expect(try JSONValue(parsing: "{}") == .object([:]))
    }

    @Test(arguments: [
        "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "[1 2]", "{\"a\" 1}", "{a:1}", "'x'",
        "\"unterminated", "\"tab\there\"", "\"\\x\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\u12\"", "tru", "nul", "NaN",
        "[1] x", "{\"a\":1}}", "1e999",
        // Issue #40 item 11: a NUL would be cut off by the first C API that reads the string.
        "\"alice\\u0000evil\"", "{\"\\u0000\":1}",
    ])
    func rejects(_ text: String) {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: text) }
    }

    @Test func keepsAnEscapedBackslashBeforeU0000() throws {
        #expect(try JSONValue(parsing: #""a\\u0000""#) == .string(#"a\u0000"#))
    }

    @Test func rejectsInvalidUTF8AndDeepNesting() throws {
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: [0x22, 0xFF, 0x22]) }
        let deep = String(repeating: "[", count: 600) + String(repeating: "]", count: 600)
        #expect(throws: JSONValue.ParseError.self) { try JSONValue(parsing: deep) }
        let ok = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        _ = try JSONValue(parsing: ok)
        do {
            _ = try JSONValue(parsing: "[1,\n  x]")
            Issue.record("parsed a bare word")
        } catch {
            #expect(error.offset == 6)  // the x
        }
    }

    @Test func agreesWithJSONSerialization() throws {
        let documents = [
            #"{"aps":{"alert":{"title":"订单","body":"已发货"},"badge":3,"sound":"default"},"order":{"id":42,"total":12.5}}"#,
            #"[1,-1,0.25,1e3,"a\"b",[],{},[null,true,false]]"#,
            #"{"nested":{"deeper":{"deepest":[{"k":"v"}]}}}"#,
        ]
        for document in documents {
            let ours = try JSONValue(parsing: document)
            let theirs = try #require(
                JSONValue(jsonObject: try JSONSerialization.jsonObject(with: Data(document.utf8))))
            #expect(ours == theirs, "\(document)")
            // Serialising and parsing again is stable.
            #expect(try JSONValue(parsing: ours.serialized()).serialized() == ours.serialized())
        }
    }

    @Test func bridgesFoundationBooleansAndNumbers() throws {
        let object = try JSONSerialization.jsonObject(with: Data(#"[true,false,1,0,1.5,1.0,"s",null]"#.utf8))
        #expect(JSONValue(jsonObject: object) == [true, false, 1, 0, 1.5, 1.0, "s", nil])
        #expect(JSONValue(jsonObject: Date()) == nil)
        let value: JSONValue = ["a": [1, true, "x", nil, 2.5]]
        let back = try JSONSerialization.data(withJSONObject: value.jsonObject)
        #expect(try JSONValue(parsing: Array(back)) == value)
        // Swift values (not NSNumbers from JSONSerialization) bridge the same way.
        #expect(JSONValue(jsonObject: value.jsonObject) == value)
        let swiftValues: [String: Any] = ["b": true, "i": 7, "i64": Int64(-3), "d": 2.25, "s": "x", "a": [false, 1]]
        #expect(
            JSONValue(jsonObject: swiftValues) == ["b": true, "i": 7, "i64": -3, "d": 2.25, "s": "x", "a": [false, 1]])
    }

    @Test func codableRoundTrip() throws {
        let value: JSONValue = [
            "flag": true, "count": 3, "ratio": 0.75, "name": "推送", "none": nil, "list": [1, "two"],
        ]
        let data = try JSONEncoder().encode(value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: data) == value)
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("true".utf8)) == .bool(true))
        #expect(try JSONDecoder().decode(JSONValue.self, from: Data("1".utf8)) == .int(1))
    }

    @Test func listsForOneStatementParameterAreWrittenAsTheValueWouldBe() throws {
        let strings = ["alice", "quote\"d", "back\\slash", "line\nbreak", "推送", ""]
        #expect(JSONValue.serializedArray(strings) == JSONValue.array(strings.map(JSONValue.string)).serializedString)
        #expect(JSONValue.serializedArray([]) == "[]")
    }

    /// Strings are copied whole when nothing in them needs escaping, from their own bytes
    /// where they have them (native strings, small or not) and otherwise byte by byte (a
    /// string bridged from Foundation): each gives the same text, escaped where needed.
    @Test func stringsAreWrittenTheSameWhateverTheirStorage() throws {
        let texts = [
            "", "a", "short", "exactly15bytes!", "a longer token of more than fifteen bytes",
            "推送 a bit longer than small", "esc\"in a long enough string", "tab\tin a long enough string",
            "\u{1}", String(repeating: "x", count: 300) + "\\",
        ]
        for text in texts {
            let bridged = NSString(string: text) as String
            var native: [UInt8] = []
            JSONValue.writeString(text, into: &native)
            var fromFoundation: [UInt8] = []
            JSONValue.writeString(bridged, into: &fromFoundation)
            #expect(native == fromFoundation, "\(text)")
            #expect(try JSONValue(parsing: native) == .string(text), "\(text)")
            let foundation = try JSONSerialization.data(withJSONObject: [text], options: [.withoutEscapingSlashes])
            #expect(try JSONValue(parsing: Array(foundation)) == .array([.string(text)]))
        }
    }

    @Test func sqlListsArePaddedToPowersOfTwoWithDistinctValues() {
        #expect(SQLList.chunks([String]()).isEmpty)
        let three = SQLList.chunks(["a", "b", "a", "c"])
        #expect(three.count == 1)
        #expect(three[0].values == ["a", "b", "c", "c"], "duplicates dropped, the last value repeated")
        #expect(three[0].marks == SQLList.marker + "?, ?, ?, ?")
        let many = SQLList.chunks((0..<(SQLList.maximumLength + 3)).map { "user\($0)" })
        #expect(many.map(\.values.count) == [SQLList.maximumLength, 4])
        #expect(Set(many.flatMap(\.values)).count == SQLList.maximumLength + 3)
        // Every length of list gives one of a handful of texts.
        let texts = Set((1...SQLList.maximumLength).map { SQLList.chunks((0..<$0).map { "u\($0)" })[0].marks })
        #expect(texts.count == 10)
    }
}
