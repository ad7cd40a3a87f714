import Foundation
import Testing

@testable import TuisongHTTP

@Suite("Query strings, forms, JSON, headers and responses")
struct DecodingTests {
    @Test("query strings decode %XX and +, keep order and repeats")
    func query() throws {
        let request = try Request(
            method: .GET, target: "/x?a=1&b=two+words&a=3&c&=empty&d=%E4%BD%A0%2B%26&&e=")
        #expect(request.query["a"] == "1")
        #expect(request.query.values(for: "a") == ["1", "3"])
        #expect(request.query["b"] == "two words")
        #expect(request.query["c"] == "")
        #expect(request.query[""] == "empty")
        #expect(request.query["d"] == "你+&")
        #expect(request.query["e"] == "")
        #expect(request.query.map(\.name) == ["a", "b", "a", "c", "", "d", "e"])
        #expect(try Request(method: .GET, target: "/x").query.isEmpty)
        // In the path, + is a literal plus.
        #expect(try Request(method: .GET, target: "/a+b%20c").path == "/a+b c")
    }

    @Test("invalid escapes and invalid UTF-8 in a query are 400")
    func badQuery() {
        for target in ["/x?a=%", "/x?a=%4", "/x?a=%zz", "/x?a=%FF", "/x?%C3%28=1"] {
            #expect(throws: HTTPError.self, "\(target)") {
                try Request(method: .GET, target: target)
            }
            do throws(HTTPError) {
                _ = try Request(method: .GET, target: target)
            } catch {
                #expect(error.status == 400)
                #expect(error.code == "bad_request")
            }
        }
    }

    @Test("the content type: the media type lower-cased, without parameters or blanks")
    func contentType() throws {
        let cases: [(String?, String?)] = [
            ("application/json; charset=utf-8", "application/json"),
            (" Application/JSON \t", "application/json"),
            ("\ttext/plain \t;q=1", "text/plain"),
            ("application/vnd.api+json", "application/vnd.api+json"),
            ("", nil), (" \t ", nil), ("; charset=utf-8", nil), (nil, nil),
        ]
        for (header, expected) in cases {
            let headers: HTTPHeaders = header.map { ["Content-Type": $0] } ?? []
            let request = try Request(method: .POST, target: "/", headers: headers)
            #expect(request.contentType == expected, "\(header ?? "none")")
        }
    }

    @Test("form bodies: content type checked, values decoded, bad bytes are 400")
    func forms() throws {
        let form = try Request(
            method: .POST, target: "/f",
            headers: ["Content-Type": "application/x-www-form-urlencoded; charset=utf-8"],
            body: Array("apikey=k%3D1&msg=hello+%E4%B8%96%E7%95%8C&sign=abc".utf8))
        let parameters = try form.formParameters()
        #expect(parameters["apikey"] == "k=1")
        #expect(parameters["msg"] == "hello 世界")
        #expect(parameters["sign"] == "abc")

        let json = try Request(
            method: .POST, target: "/f", headers: ["Content-Type": "application/json"],
            body: Array("a=1".utf8))
        #expect(
            throws: HTTPError.unsupportedMediaType(
                "expected Content-Type application/x-www-form-urlencoded, got application/json")
        ) {
            try json.formParameters()
        }
        let rawInvalid = try Request(
            method: .POST, target: "/f",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Array("a=".utf8) + [0xFF, 0xFE])
        #expect(throws: HTTPError.self) { try rawInvalid.formParameters() }
        let escapedInvalid = try Request(
            method: .POST, target: "/f",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Array("a=%C0%AF".utf8))
        #expect(throws: HTTPError.self) { try escapedInvalid.formParameters() }
        let badEscape = try Request(
            method: .POST, target: "/f",
            headers: ["Content-Type": "application/x-www-form-urlencoded"],
            body: Array("a=%2".utf8))
        #expect(throws: HTTPError.self) { try badEscape.formParameters() }
        #expect(try Request(method: .POST, target: "/f").formParameters().isEmpty)
    }

    struct Device: Codable, Equatable {
        var token: String
        var badge: Int
        var tags: [String]?
    }

    @Test("JSON bodies: 415 unless JSON, 400 with the field named")
    func json() throws {
        func request(_ body: String, type: String? = "application/json") throws -> Request {
            var headers: HTTPHeaders = []
            if let type { headers.add(name: "Content-Type", value: type) }
            return try Request(
                method: .POST, target: "/j", headers: headers, body: Array(body.utf8))
        }
        #expect(
            try request(#"{"token":"t","badge":2}"#).decodeJSON(Device.self)
                == Device(token: "t", badge: 2))
        #expect(
            try request(#"{"token":"t","badge":2}"#, type: "application/merge-patch+json")
                .decodeJSON(Device.self).badge == 2)
        #expect(
            try request(#"{"token":"t","badge":2}"#, type: "Application/JSON; charset=UTF-8")
                .decodeJSON(Device.self).token == "t")

        func failure(_ body: String, type: String? = "application/json") throws -> HTTPError? {
            let request = try request(body, type: type)
            do throws(HTTPError) {
                _ = try request.decodeJSON(Device.self)
                return nil
            } catch {
                return error
            }
        }
        #expect(try failure("{}", type: "text/plain")?.status == 415)
        #expect(try failure("{}", type: nil)?.status == 415)
        #expect(try failure(#"{"token":"t"}"#)?.message == #"field "badge" is required"#)
        #expect(
            try failure(#"{"token":"t","badge":"x"}"#)?.message.contains(
                #"field "badge" has the wrong type"#) == true)
        #expect(
            try failure(#"{"token":"t","badge":1,"tags":[1]}"#)?.message.contains(
                #"field "tags[0]""#) == true)
        #expect(try failure(#"{"token": "#)?.status == 400)
        // Where the JSON breaks, not Foundation's "The data is not in the correct format".
        #expect(
            try failure("{\"token\":\"t\",\n \"badge\": x}")?.message
                == "malformed JSON: invalid JSON at byte 24: unexpected character")
        // Issue #40 item 11: a NUL spelled in a string is refused, not cut off downstream.
        let nul = try failure(#"{"token":"alice\u0000evil","badge":1}"#)
        #expect(nul?.status == 400)
        #expect(nul?.message.contains("\\u0000 (NUL)") == true)
        #expect(try request(#"{"token":"a\\u0000","badge":1}"#).decodeJSON(Device.self).token == #"a\u0000"#)
        #expect(throws: HTTPError.self) { try request(#"{"token":"\u0000"}"#).jsonObject() }
        let malformed = try request("{\"a\": [1,,2]}")
        do throws(HTTPError) {
            _ = try malformed.jsonObject()
            Issue.record("parsed a malformed body")
        } catch {
            #expect(error.message == "malformed JSON: invalid JSON at byte 9: unexpected character")
        }
        #expect(try failure("")?.message.contains("empty") == true)

        let invalidUTF8 = try Request(
            method: .POST, target: "/j", headers: ["Content-Type": "application/json"],
            body: Array(#"{"token":""#.utf8) + [0xED, 0xA0, 0x80] + Array(#"","badge":1}"#.utf8))
        #expect(throws: HTTPError.badRequest("the request body is not valid UTF-8")) {
            try invalidUTF8.decodeJSON(Device.self)
        }
        #expect(throws: HTTPError.badRequest("the request body is not valid UTF-8")) {
            try invalidUTF8.jsonObject()
        }

        let object = try request(#"{"a":[1,2],"b":{"c":null}}"#).jsonObject()
        #expect((object["a"] as? [Int]) == [1, 2])
        #expect(throws: HTTPError.badRequest("the JSON body must be an object")) {
            try request("[1]").jsonObject()
        }
        #expect(throws: HTTPError.self) { try request("{oops}").jsonObject() }

        // The native push API's reading: the same checks and answers, straight into JSONValue.
        #expect(
            try request(#"{"a":[1,2.5],"b":{"c":null},"d":true}"#).jsonMembers()
                == ["a": [1, 2.5], "b": ["c": .null], "d": true])
        #expect(throws: HTTPError.badRequest("the JSON body must be an object")) {
            try request("[1]").jsonMembers()
        }
        #expect(throws: HTTPError.badRequest("malformed JSON: invalid JSON at byte 9: unexpected character")) {
            try request("{\"a\": [1,,2]}").jsonMembers()
        }
        #expect(throws: HTTPError.badRequest("the request body is not valid UTF-8")) {
            try invalidUTF8.jsonMembers()
        }
        #expect(throws: HTTPError.self) { try request(#"{"token":"\u0000"}"#).jsonMembers() }
        #expect(throws: HTTPError.self) { try request("").jsonMembers() }
    }

    @Test("responses: JSON with sorted keys, text, empty")
    func responses() {
        struct Payload: Encodable {
            let zeta = 1
            let alpha = "a/b"
            let middle = [3, 1]
        }
        let encoded = Response.json(Payload(), status: 202)
        #expect(encoded.status == 202)
        #expect(
            String(decoding: encoded.body, as: UTF8.self)
                == #"{"alpha":"a/b","middle":[3,1],"zeta":1}"#)
        #expect(encoded.headers["content-type"] == "application/json; charset=utf-8")
        let object = Response.json(object: ["b": 1, "a": ["y": true, "x": NSNull()]])
        #expect(String(decoding: object.body, as: UTF8.self) == #"{"a":{"x":null,"y":true},"b":1}"#)
        #expect(Response.json(Double.nan).status == 500)
        #expect(Response.json(object: Date()).status == 500)
        #expect(Response.text("hi").headers["Content-Type"] == "text/plain; charset=utf-8")
        #expect(Response.empty().status == 204)
        #expect(Response.empty().body.isEmpty)
    }

    @Test("headers: ordered, case-insensitive, replaceOrAdd collapses duplicates")
    func headers() {
        var headers: HTTPHeaders = ["Content-Type": "text/plain"]
        headers.add(name: "Set-Cookie", value: "a=1")
        headers.add(name: "set-cookie", value: "b=2")
        #expect(headers["CONTENT-TYPE"] == "text/plain")
        #expect(headers.values(for: "Set-Cookie") == ["a=1", "b=2"])
        headers.replaceOrAdd(name: "SET-COOKIE", value: "c=3")
        #expect(headers.values(for: "set-cookie") == ["c=3"])
        headers.replaceOrAdd(name: "X-New", value: "1")
        #expect(headers.map(\.name) == ["Content-Type", "SET-COOKIE", "X-New"])
        #expect(headers["Content-Typ"] == nil)
        // Folding applies to letters only: "[" (0x5B) is not "{" (0x7B).
        #expect(headers["x-new"] == "1")
        #expect(!asciiCaseInsensitiveEquals("a[", "a{"))
        #expect(asciiCaseInsensitiveEquals("ETag", "etag"))
    }
}
