import Foundation
import TuisongCore

/// A JSON request body read the way Easemob reads it: whatever the `Content-Type` (real
/// clients send `application/json` also on GET and DELETE, and Easemob's own curl examples
/// send none), an empty body reads as `{}`, malformed JSON is `json_parse`, and a field of the
/// wrong type is `illegal_argument` naming the field.
struct EasemobBody: Sendable {
    let value: JSONValue

    init(_ bytes: [UInt8]) throws(EasemobError) {
        if bytes.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            value = .object([:])
            return
        }
        do {
            value = try JSONValue(parsing: bytes)
        } catch {
            throw .jsonParse("Unexpected content at byte \(error.offset): \(error.message)")
        }
    }

    init(value: JSONValue) {
        self.value = value
    }

    /// The body as an object, or `illegal_argument`.
    func object() throws(EasemobError) -> EasemobObject {
        guard case .object(let members) = value else {
            throw .illegalArgument("the request body must be a JSON object")
        }
        return EasemobObject(members: members, path: "")
    }
}

/// Typed access to one JSON object's fields, with errors naming the field.
struct EasemobObject: Sendable {
    let members: [String: JSONValue]
    /// Where this object sits in the body (`msg.`), for error messages.
    let path: String

    subscript(key: String) -> JSONValue? {
        guard let value = members[key], value != .null else { return nil }
        return value
    }

    func has(_ key: String) -> Bool { members[key] != nil }

    /// A string; numbers are accepted and written in decimal (Easemob's own examples send
    /// `"ttl": "1024000"` and `"notification_display_style": "1"`, so clients mix both).
    func string(_ key: String) throws(EasemobError) -> String? {
        guard let value = self[key] else { return nil }
        switch value {
        case .string(let text): return text
        case .int(let number): return String(number)
        case .double(let number) where number.rounded() == number && abs(number) < 1e15:
            return String(Int64(number))
        default: throw .illegalArgument("\(path)\(key) must be a string")
        }
    }

    func requiredString(_ key: String) throws(EasemobError) -> String {
        guard let text = try string(key) else { throw .illegalArgument("\(path)\(key) is required") }
        return text
    }

    /// An integer; a string of digits is accepted too.
    func integer(_ key: String) throws(EasemobError) -> Int64? {
        guard let value = self[key] else { return nil }
        if let number = value.intValue { return number }
        if case .string(let text) = value, let number = Int64(text.trimmingCharacters(in: .whitespaces)) {
            return number
        }
        throw .illegalArgument("\(path)\(key) must be an integer")
    }

    /// A boolean; `"true"`/`"false"` strings are accepted too.
    func bool(_ key: String) throws(EasemobError) -> Bool? {
        guard let value = self[key] else { return nil }
        switch value {
        case .bool(let flag): return flag
        case .string("true"): return true
        case .string("false"): return false
        default: throw .illegalArgument("\(path)\(key) must be true or false")
        }
    }

    func object(_ key: String) throws(EasemobError) -> EasemobObject? {
        guard let value = self[key] else { return nil }
        guard case .object(let members) = value else { throw .illegalArgument("\(path)\(key) must be an object") }
        return EasemobObject(members: members, path: "\(path)\(key).")
    }

    /// An array of strings (numbers written in decimal: group ids are often sent as numbers).
    func strings(_ key: String) throws(EasemobError) -> [String]? {
        guard let value = self[key] else { return nil }
        guard case .array(let elements) = value else { throw .illegalArgument("\(path)\(key) must be an array") }
        var result: [String] = []
        for element in elements {
            switch element {
            case .string(let text): result.append(text)
            case .int(let number): result.append(String(number))
            default: throw .illegalArgument("\(path)\(key) must be an array of strings")
            }
        }
        return result
    }
}

/// Easemob usernames: 1–64 of `a-z 0-9 _ - .`, case-insensitive (stored lower-cased, as
/// Easemob does: `Aa` and `aa` are one user).
enum EasemobUsername {
    static func normalize(_ raw: String) -> String? {
        let lowered = raw.lowercased()
        guard !lowered.isEmpty, lowered.utf8.count <= 64,
            lowered.utf8.allSatisfy({ byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                    UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
                    true
                default: false
                }
            })
        else { return nil }
        return lowered
    }

    /// The normalized username or `illegal_argument` ("username is not legal", Easemob's words).
    static func validated(_ raw: String) throws(EasemobError) -> String {
        guard let name = normalize(raw) else {
            throw .illegalArgument("username is not legal: \(raw.prefix(80))")
        }
        return name
    }
}
