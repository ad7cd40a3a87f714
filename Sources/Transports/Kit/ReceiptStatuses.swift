import Foundation
import TuisongCore

/// A receipt body of the `{"statuses":[{…}, …]}` form, which more than one service posts (up
/// to 1,000 statuses a POST; each transport reads its own statuses' fields). Read with `JSONReader` straight into
/// `ServiceReceipt`s, so a POST costs no `JSONValue` tree, no dictionary per status and no
/// string for a field nobody reads (`appid`, `requestId`). The outcome is what reading the body
/// whole would give: a body that is not JSON, not an object, or whose last `statuses` member is
/// not an array is refused as not `{"statuses":[…]}`, whatever its statuses hold; otherwise a
/// status the transport's reader refuses refuses the POST with `incomplete`.
public enum ReceiptStatuses {
    public static let notStatuses = ReceiptFormatError("the body is not {\"statuses\":[…]}")

    /// The receipts of `body`. `status` reads one element of the array (the reader before it;
    /// it must read or skip the whole element) and returns its receipt, or nil for an element
    /// without what the service always sends (a token, a status code).
    public static func read(
        _ body: [UInt8], incomplete: ReceiptFormatError,
        status: (inout JSONReader) throws(JSONValue.ParseError) -> ServiceReceipt?
    ) throws(ReceiptFormatError) -> [ServiceReceipt] {
        var reader = JSONReader(body)
        var isObject = false
        // Of the last `statuses` member (as a JSON object keeps a duplicate key's last value).
        var statuses: [ServiceReceipt]?
        var lacking = false
        do throws(JSONValue.ParseError) {
            if reader.peek == .object {
                isObject = true
                try reader.beginObject()
                while let key = try reader.nextKey() {
                    guard key == "statuses" else {
                        try reader.skipValue()
                        continue
                    }
                    guard reader.peek == .array else {
                        statuses = nil
                        try reader.skipValue()
                        continue
                    }
                    var list: [ServiceReceipt] = []
                    list.reserveCapacity(min(1000, body.count / 100))
                    lacking = false
                    try reader.beginArray()
                    while try reader.nextElement() {
                        guard let receipt = try status(&reader) else {
                            lacking = true
                            continue
                        }
                        list.append(receipt)
                    }
                    statuses = list
                }
            } else {
                try reader.skipValue()
            }
            try reader.finish()
        } catch {
            throw notStatuses
        }
        guard isObject, let statuses else { throw notStatuses }
        if lacking { throw incomplete }
        return statuses
    }

    /// The number of statuses of `body` without reading them: the check a POST gets before its
    /// answer where the service's signature covers its header and not its body (the Push Kit
    /// services'), so the body is kept as posted and read by the digest. One pass over the
    /// bytes that refuses a body that is not one JSON object (brackets and braces balanced,
    /// strings closed and without raw control characters, members `"key": value` separated by
    /// commas, nothing after it) or whose last `statuses` member is not an array, and counts
    /// that array's elements. It reads no value: a number or literal spelled wrong, a bad
    /// escape or invalid UTF-8 inside a string, or a status without what the service always
    /// sends passes here and is refused by `read` when the digest reads the body.
    public static func count(_ body: [UInt8]) throws(ReceiptFormatError) -> Int {
        let counted = body.withUnsafeBufferPointer { StructuralScan(bytes: $0).statuses() }
        guard let counted else { throw notStatuses }
        return counted
    }

    /// The receipts of a Push Kit V1 body, `{"statuses":[{"biTag","appid","token","status",
    /// "timestamp","requestId"}]}`: Huawei's, and the shape Honor's API (derived from Huawei's)
    /// is read in. `outcome` reads a status code the service's way. A status without its token
    /// or status code refuses the POST. `requestId` is kept only for a status without a tag (read
    /// only while no tag came before it), for the fallback by request.
    public static func pushKitV1(_ body: [UInt8], outcome: (Int64) -> ReceiptOutcome) throws(ReceiptFormatError)
        -> [ServiceReceipt]
    {
        try read(body, incomplete: ReceiptFormatError("a status without its token or status")) {
            (reader) throws(JSONValue.ParseError) -> ServiceReceipt? in
            guard reader.peek == .object else {
                try reader.skipValue()
                return nil
            }
            var token: String?
            var code: Int64?
            var tag: String?
            var at: Date?
            var requestID: String?
            try reader.beginObject()
            while let key = try reader.nextKey() {
                switch key {
                case "token": token = try string(&reader)
                case "status": code = try integer(&reader)
                case "timestamp": at = try milliseconds(&reader)
                case "biTag": tag = try string(&reader)
                case "requestId" where tag?.isEmpty ?? true: requestID = try string(&reader)
                default: try reader.skipValue()
                }
            }
            guard let token, !token.isEmpty, let code else { return nil }
            let tagged = !(tag?.isEmpty ?? true)
            return ServiceReceipt(
                tag: tag ?? "", token: token, outcome: outcome(code), at: at, requestID: tagged ? nil : requestID)
        }
    }

    /// A member's value as a string; nil for any other JSON value (skipped whole).
    public static func string(_ reader: inout JSONReader) throws(JSONValue.ParseError) -> String? {
        try reader.readValue().stringValue
    }

    /// A member's value as an integer: a JSON number, or a string holding one
    /// (`ReceiptFields.integer`).
    public static func integer(_ reader: inout JSONReader) throws(JSONValue.ParseError) -> Int64? {
        ReceiptFields.integer(try reader.readValue())
    }

    /// A member's value as a moment in milliseconds since 1970, a JSON number only (the
    /// services write their timestamps as numbers; any other value reads as none).
    public static func milliseconds(_ reader: inout JSONReader) throws(JSONValue.ParseError) -> Date? {
        try reader.readValue().intValue.map { Date(timeIntervalSince1970: Double($0) / 1000) }
    }
}

/// `ReceiptStatuses.count`'s pass: JSON's structure (containers, strings, members and commas)
/// with scalars taken as runs of the bytes they may be spelled with, unread.
private struct StructuralScan {
    let bytes: UnsafeBufferPointer<UInt8>
    /// Deeper than any status of a service's; past it the body is refused (the stack stays small).
    static let maxDepth = 64

    private enum Expect {
        /// A value (after `:`, at the start, after `,` in an array).
        case value
        /// A value or `]` (just after `[`).
        case valueOrClose
        /// A key or `}` (just after `{`).
        case keyOrClose
        /// A key (after `,` in an object).
        case key
        /// `:` after a key.
        case colon
        /// `,` or the container's close, after a value.
        case commaOrClose
        /// Nothing but white space (after the top-level value).
        case end
    }

    /// The elements of the top-level object's last `statuses` member, nil when the body is not
    /// an object whose last `statuses` is an array (or not well formed).
    func statuses() -> Int? {
        // true: an object.
        var stack: [Bool] = []
        stack.reserveCapacity(8)
        var expect = Expect.value
        var i = 0
        let n = bytes.count
        // The last `statuses` member's elements; nil while none is an array.
        var statuses: Int?
        // The count of the `statuses` array being read, and its depth (its elements' level).
        var counting: Int?
        var countingDepth = 0
        // A top-level key `statuses` was just read: its value decides `statuses`.
        var statusesValuePending = false
        var topIsObject = false

        /// A value begins at the current depth.
        func valueBegins(_ isArray: Bool) {
            if counting != nil && stack.count == countingDepth { counting! += 1 }
            if statusesValuePending {
                statusesValuePending = false
                if isArray {
                    counting = 0
                    countingDepth = stack.count + 1
                } else {
                    statuses = nil
                }
            }
        }
        func afterValue() { expect = stack.isEmpty ? .end : .commaOrClose }

        while i < n {
            let byte = bytes[i]
            switch byte {
            case 0x20, 0x09, 0x0A, 0x0D:
                i += 1
                continue
            default: break
            }
            switch expect {
            case .end:
                return nil
            case .colon:
                guard byte == UInt8(ascii: ":") else { return nil }
                expect = .value
                i += 1
            case .keyOrClose, .key:
                if byte == UInt8(ascii: "}"), case .keyOrClose = expect {
                    stack.removeLast()
                    afterValue()
                    i += 1
                    continue
                }
                guard byte == UInt8(ascii: "\""), let end = stringEnd(from: i) else { return nil }
                if stack.count == 1 {
                    statusesValuePending = isStatusesKey(from: i + 1, to: end)
                }
                i = end + 1
                expect = .colon
            case .commaOrClose:
                let isObject = stack.last!
                if byte == UInt8(ascii: ",") {
                    expect = isObject ? .key : .value
                    i += 1
                } else if byte == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    if !isObject, let count = counting, stack.count == countingDepth {
                        statuses = count
                        counting = nil
                    }
                    stack.removeLast()
                    afterValue()
                    i += 1
                } else {
                    return nil
                }
            case .value, .valueOrClose:
                if byte == UInt8(ascii: "]"), case .valueOrClose = expect {
                    if let count = counting, stack.count == countingDepth {
                        statuses = count
                        counting = nil
                    }
                    stack.removeLast()
                    afterValue()
                    i += 1
                    continue
                }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    let isObject = byte == UInt8(ascii: "{")
                    if stack.isEmpty { topIsObject = isObject }
                    valueBegins(!isObject)
                    guard stack.count < Self.maxDepth else { return nil }
                    stack.append(isObject)
                    expect = isObject ? .keyOrClose : .valueOrClose
                    i += 1
                case UInt8(ascii: "\""):
                    guard let end = stringEnd(from: i) else { return nil }
                    valueBegins(false)
                    i = end + 1
                    afterValue()
                default:
                    // A number or a literal: its run of bytes, not read.
                    var j = i
                    while j < n, Self.isScalarByte(bytes[j]) { j += 1 }
                    guard j > i else { return nil }
                    valueBegins(false)
                    i = j
                    afterValue()
                }
            }
        }
        guard case .end = expect, topIsObject else { return nil }
        return statuses
    }

    /// The index of the quote that closes the string opening at `start`; nil when it is not
    /// closed or holds a raw control character.
    private func stringEnd(from start: Int) -> Int? {
        var i = start + 1
        let n = bytes.count
        while i < n {
            let byte = bytes[i]
            if byte == UInt8(ascii: "\"") { return i }
            if byte == UInt8(ascii: "\\") {
                i += 2
                continue
            }
            if byte < 0x20 { return nil }
            i += 1
        }
        return nil
    }

    private static let statusesKey = Array("statuses".utf8)

    /// Whether the key's bytes (between its quotes) spell `statuses` (as the services write it,
    /// without escapes).
    private func isStatusesKey(from start: Int, to end: Int) -> Bool {
        guard end - start == Self.statusesKey.count else { return false }
        for k in 0..<Self.statusesKey.count where bytes[start + k] != Self.statusesKey[k] { return false }
        return true
    }

    private static func isScalarByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
            UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "-"), UInt8(ascii: "+"), UInt8(ascii: "."):
            true
        default: false
        }
    }
}
