import Foundation
import Testing
import TuisongCore

/// `JSONReader`: the grammar of `JSONValue(parsing:)` read a piece at a time; what it skips is
/// checked as strictly as what it reads.
@Suite struct JSONReaderTests {
    /// Whether skipping the whole text succeeds.
    static func skips(_ bytes: [UInt8]) -> Bool {
        var reader = JSONReader(bytes)
        do {
            try reader.skipValue()
            try reader.finish()
            return true
        } catch {
            return false
        }
    }

    static func parses(_ bytes: [UInt8]) -> Bool { (try? JSONValue(parsing: bytes)) != nil }

    @Test(arguments: [
        "", " ", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "+1", "[1 2]", "{\"a\" 1}", "{a:1}", "'x'",
        "\"unterminated", "\"tab\there\"", "\"\\x\"", "\"\\ud83d\"", "\"\\ude00\"", "\"\\u12\"", "tru", "nul", "NaN",
        "[1] x", "{\"a\":1}}", "1e999", "\"alice\\u0000evil\"", "{\"\\u0000\":1}", "{,}", "[,1]", "{\"a\":1 \"b\":2}",
        "{\"a\":[1,{\"b\":\"\\q\"}]}", "[[[", "{\"a\":", "[\"x\" ,]",
    ])
    func skippingRefusesWhatParsingRefuses(_ text: String) {
        #expect(!Self.parses(Array(text.utf8)))
        #expect(!Self.skips(Array(text.utf8)), "\(text)")
    }

    @Test(arguments: [
        "0", "-0", "1.5e3", "true", "false", "null", "\"\"", "\"a\\\"b\\\\c\\u00e9\\ud83d\\ude00\"", "[]", "{}",
        " [ 1 , { \"a\" : [ ] , \"b\" : { } } , \"x\" ] ", "{\"a\":1,\"a\":2}", "\"好\"",
    ])
    func skippingTakesWhatParsingTakes(_ text: String) {
        #expect(Self.parses(Array(text.utf8)))
        #expect(Self.skips(Array(text.utf8)), "\(text)")
    }

    /// A skipped string's bytes outside ASCII are checked in place, as `String(validating:)`
    /// checks a read one.
    @Test func skippedStringsAreValidUTF8OrRefused() {
        let sequences: [[UInt8]] = [
            [0xC3, 0xA9], [0xE5, 0xA5, 0xBD], [0xF0, 0x9F, 0x98, 0x80], [0xF4, 0x8F, 0xBF, 0xBF],  // valid
            [0xC0, 0x80], [0xC1, 0xBF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF0, 0x80, 0x80, 0x80],
            [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF], [0x80], [0xE2, 0x82], [0xC3],
            [0xE2, 0x28, 0xA1], [0xF0, 0x9F, 0x98],
        ]
        for sequence in sequences {
            for text in [[0x22] + sequence + [0x22], [0x22, 0x61] + sequence + [0x62, 0x22]] {
                let wrapped = Array("{\"k\":".utf8) + text + [0x7D]
                #expect(Self.skips(text) == Self.parses(text), "\(sequence)")
                #expect(Self.skips(wrapped) == Self.parses(wrapped), "\(sequence)")
            }
        }
        #expect(Self.skips([0x22, 0xC3, 0xA9, 0x22]))
        #expect(!Self.skips([0x22, 0xED, 0xA0, 0x80, 0x22]))
    }

    @Test func readsMembersAndElementsInOrderAndSkipsTheRest() throws {
        let text = #" {"skip":{"deep":[1,2,{"x":null}]},"list":[{"n":1},{"n":"2"},[],7],"s":"v","last":true} "#
        var reader = JSONReader(Array(text.utf8))
        #expect(reader.peek == .object)
        try reader.beginObject()
        var keys: [String] = []
        var read: [JSONValue] = []
        while let key = try reader.nextKey() {
            keys.append(key)
            switch key {
            case "list":
                #expect(reader.peek == .array)
                try reader.beginArray()
                while try reader.nextElement() {
                    guard reader.peek == .object else {
                        read.append(try reader.readValue())
                        continue
                    }
                    try reader.beginObject()
                    while let member = try reader.nextKey() {
                        #expect(member == "n")
                        read.append(try reader.readValue())
                    }
                }
            case "s", "last": read.append(try reader.readValue())
            default: try reader.skipValue()
            }
        }
        try reader.finish()
        #expect(keys == ["skip", "list", "s", "last"])
        #expect(read == [1, "2", [], 7, "v", true])
    }

    @Test func anEmptyObjectOrArrayHasNoMembersOrElements() throws {
        var reader = JSONReader(Array(#"[{},[ ],{ "a" : [] }]"#.utf8))
        try reader.beginArray()
        #expect(try reader.nextElement())
        try reader.beginObject()
        #expect(try reader.nextKey() == nil)
        #expect(try reader.nextElement())
        try reader.beginArray()
        #expect(try reader.nextElement() == false)
        #expect(try reader.nextElement())
        try reader.beginObject()
        #expect(try reader.nextKey() == "a")
        try reader.beginArray()
        #expect(try reader.nextElement() == false)
        #expect(try reader.nextKey() == nil)
        #expect(try reader.nextElement() == false)
        try reader.finish()
    }

    @Test func askingForTheWrongKindThrowsWhereItIs() {
        var reader = JSONReader(Array("  [1]".utf8))
        do {
            try reader.beginObject()
            Issue.record("entered an array as an object")
        } catch {
            #expect(error.offset == 2)
        }
        #expect(JSONReader(Array("".utf8)).peek == nil)
        #expect(JSONReader(Array(" x".utf8)).peek == nil)
    }

    /// The reader is what `JSONValue(parsing:)` runs on: the same values, the same offsets.
    @Test func numbersAndOffsetsAreThoseOfTheTreeParser() throws {
        #expect(try JSONValue(parsing: "9223372036854775807") == .int(.max))
        #expect(try JSONValue(parsing: "-9223372036854775808") == .int(.min))
        #expect(try JSONValue(parsing: "9223372036854775808") == .double(9_223_372_036_854_775_808))
        #expect(try JSONValue(parsing: "-0") == .int(0))
        #expect(try JSONValue(parsing: "-12.5e1") == .double(-125))
        #expect(try JSONValue(parsing: "[0,10,-7]") == [0, 10, -7])
        for (text, offset) in [("[1,\n  x]", 6), ("{\"a\":1,}", 7), ("\"\u{7}\"", 1), ("[1 2]", 3)] {
            do {
                _ = try JSONValue(parsing: text)
                Issue.record("parsed \(text)")
            } catch {
                #expect(error.offset == offset, "\(text): \(error)")
            }
        }
    }
}
