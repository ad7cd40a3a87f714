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
