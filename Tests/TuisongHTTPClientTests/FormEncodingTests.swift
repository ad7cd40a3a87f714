import Testing
import TuisongHTTPClient

@Suite("FormEncoding")
struct FormEncodingTests {
    private func encoded(_ fields: [(String, String)]) -> String {
        String(decoding: FormEncoding.encode(fields), as: UTF8.self)
    }

    @Test("fields joined with & and =, spaces as +")
    func spaces() {
        #expect(
            encoded([("grant_type", "client_credentials"), ("scope", "a b  c")])
                == "grant_type=client_credentials&scope=a+b++c")
        #expect(encoded([]) == "")
        #expect(encoded([("empty", "")]) == "empty=")
    }

    @Test("unreserved characters kept, reserved ones escaped in upper-case hex")
    func reserved() {
        #expect(encoded([("k", "AZaz09-._*")]) == "k=AZaz09-._*")
        #expect(encoded([("a&b=c", "+/?#%~!'()")]) == "a%26b%3Dc=%2B%2F%3F%23%25%7E%21%27%28%29")
        #expect(encoded([("line", "1\r\n2\t")]) == "line=1%0D%0A2%09")
    }

    @Test("non-ASCII text as percent-escaped UTF-8")
    func unicode() {
        #expect(encoded([("title", "推送 é")]) == "title=%E6%8E%A8%E9%80%81+%C3%A9")
        #expect(encoded([("emoji", "👍")]) == "emoji=%F0%9F%91%8D")
    }

    @Test("a form decodes back to its fields; a broken escape or non-UTF-8 is nil")
    func decode() throws {
        let fields: [(String, String)] = [("data", #"{"m":{"targets":"a,b"}}"#), ("title", "推送 é"), ("empty", "")]
        let decoded = try #require(FormEncoding.decode(FormEncoding.encode(fields)))
        #expect(decoded.map(\.0) == fields.map(\.0))
        #expect(decoded.map(\.1) == fields.map(\.1))
        #expect(FormEncoding.decode(Array("a=%7".utf8)) == nil)
        #expect(FormEncoding.decode(Array("a=%zz".utf8)) == nil)
        #expect(FormEncoding.decode(Array("a=%FF".utf8)) == nil)
        #expect(FormEncoding.decode(Array("flag&b=1".utf8))?.map(\.1) == ["", "1"])
    }
}
