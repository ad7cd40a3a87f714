import Foundation

// An `Encoder` that builds a `JSONValue` straight from a value's `Encodable` conformance.
//
// Why not `JSONEncoder`: on the accept path a chat message stores its audience, content,
// options and labels as JSON and answers a small JSON object, and Foundation's encoder (a
// fresh encoder, coding paths, a reference tree, sorting, `Data`) was ~6 % of the gateway's
// CPU per message (perf, `make bench-messages`, 2026-11-26). This one keeps no coding path
// and writes through `JSONValue.serialized()`, whose keys are sorted by UTF-8 bytes like the
// `.sortedKeys` output it replaces. What it does not handle the way `JSONEncoder` does
// (`Data`, `URL`, `Decimal`, integers beyond `Int64`) makes it throw
// `JSONValue.EncodingUnsupported`, and the callers fall back to `JSONEncoder`, so the
// output never differs in meaning from Foundation's.

extension JSONValue {
    /// Thrown by `init(encoding:)` for what only `JSONEncoder` encodes faithfully.
    public struct EncodingUnsupported: Error, CustomStringConvertible {
        public let description: String
    }

    /// `value` as JSON, through its `Encodable` conformance. Throws `EncodingUnsupported` for
    /// `Data`, `URL`, `Decimal` and integers beyond `Int64`, and
    /// `EncodingError.invalidValue` for a non-finite floating-point number (as `JSONEncoder`).
    public init<T: Encodable>(encoding value: T) throws {
        // A value that is one already (a handler's own answer), or that builds its own (a
        // message's stored content and options), needs no encoder.
        if T.self == JSONValue.self {
            self = value as! JSONValue
            return
        }
        if let representable = value as? any JSONValueRepresentable {
            self = try representable.jsonValue()
            return
        }
        // A message's labels.
        if let strings = value as? [String: String] {
            self = .object(strings.mapValues(JSONValue.string))
            return
        }
        self = try TreeEncoder.slot(for: value).resolved()
    }

    /// `value`'s JSON text with sorted keys: `init(encoding:)`, or `JSONEncoder` (sorted keys,
    /// unescaped slashes) for what it does not handle.
    public static func encodedText<T: Encodable>(_ value: T) throws -> [UInt8] {
        do {
            return try JSONValue(encoding: value).serialized()
        } catch is EncodingUnsupported {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            return [UInt8](try encoder.encode(value))
        }
    }
}

/// A value that writes its JSON itself: its `encode(to:)` encodes `jsonValue()` (each type says
/// so in one line), so the two cannot differ, and `JSONValue(encoding:)` (a stored row's columns,
/// `JSONText.encode`) takes the value without an `Encoder` (the stored content and options of a
/// chat message were ~3 % of its CPU through one).
public protocol JSONValueRepresentable: Encodable {
    /// Throws what `JSONEncoder` would (a non-finite number).
    func jsonValue() throws -> JSONValue
}

/// A node of the tree being encoded: containers are boxes so a nested container handed out
/// earlier still writes into its parent.
private enum Slot {
    case value(JSONValue)
    case object(ObjectBox)
    case array(ArrayBox)
    /// A `superEncoder()`'s: whatever was encoded into it by the end.
    case deferred(TreeEncoder)

    func resolved() -> JSONValue {
        switch self {
        case .value(let value): value
        case .object(let box): .object(box.members.mapValues { $0.resolved() })
        case .array(let box): .array(box.elements.map { $0.resolved() })
        case .deferred(let encoder): encoder.slot?.resolved() ?? .object([:])
        }
    }
}

private final class ObjectBox {
    var members: [String: Slot] = [:]
}

private final class ArrayBox {
    var elements: [Slot] = []
}

private final class TreeEncoder: Encoder {
    var slot: Slot?
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    /// The slot for one value: the scalars and `JSONValue` directly, everything else through
    /// its own `encode(to:)`. A value that encodes nothing is an empty object, as in Foundation.
    static func slot<T: Encodable>(for value: T) throws -> Slot {
        // Exact type tests, not `as?` casts: a bridging cast could read a Bool as an Int.
        if T.self == JSONValue.self { return .value(value as! JSONValue) }
        if T.self == String.self { return .value(.string(value as! String)) }
        if T.self == Bool.self { return .value(.bool(value as! Bool)) }
        if T.self == Int.self { return .value(.int(Int64(value as! Int))) }
        if T.self == Int64.self { return .value(.int(value as! Int64)) }
        if T.self == Double.self { return .value(try finite(value as! Double)) }
        if T.self == Data.self || T.self == URL.self || T.self == Decimal.self {
            throw JSONValue.EncodingUnsupported(description: "\(T.self) is encoded by JSONEncoder")
        }
        let encoder = TreeEncoder()
        try value.encode(to: encoder)
        return encoder.slot ?? .object(ObjectBox())
    }

    static func finite(_ value: Double) throws -> JSONValue {
        guard value.isFinite else {
            throw EncodingError.invalidValue(
                value, .init(codingPath: [], debugDescription: "\(value) is not a valid JSON number"))
        }
        return .double(value)
    }

    static func integer<I: BinaryInteger>(_ value: I) throws -> JSONValue {
        guard let exact = Int64(exactly: value) else {
            throw JSONValue.EncodingUnsupported(description: "\(value) is beyond Int64")
        }
        return .int(exact)
    }

    func objectBox() -> ObjectBox {
        if case .object(let box) = slot { return box }
        let box = ObjectBox()
        slot = .object(box)
        return box
    }

    func arrayBox() -> ArrayBox {
        if case .array(let box) = slot { return box }
        let box = ArrayBox()
        slot = .array(box)
        return box
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(KeyedContainer<Key>(box: objectBox()))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        UnkeyedContainer(box: arrayBox())
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        SingleValueContainer(encoder: self)
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let box: ObjectBox
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil(forKey key: Key) { box.members[key.stringValue] = .value(.null) }
    mutating func encode(_ value: Bool, forKey key: Key) { box.members[key.stringValue] = .value(.bool(value)) }
    mutating func encode(_ value: String, forKey key: Key) {
        box.members[key.stringValue] = .value(.string(value))
    }
    mutating func encode(_ value: Double, forKey key: Key) throws {
        box.members[key.stringValue] = .value(try TreeEncoder.finite(value))
    }
    mutating func encode(_ value: Float, forKey key: Key) throws {
        box.members[key.stringValue] = .value(try TreeEncoder.finite(Double(value)))
    }
    mutating func encode(_ value: Int, forKey key: Key) { box.members[key.stringValue] = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int8, forKey key: Key) { box.members[key.stringValue] = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int16, forKey key: Key) {
        box.members[key.stringValue] = .value(.int(Int64(value)))
    }
    mutating func encode(_ value: Int32, forKey key: Key) {
        box.members[key.stringValue] = .value(.int(Int64(value)))
    }
    mutating func encode(_ value: Int64, forKey key: Key) { box.members[key.stringValue] = .value(.int(value)) }
    mutating func encode(_ value: UInt, forKey key: Key) throws {
        box.members[key.stringValue] = .value(try TreeEncoder.integer(value))
    }
    mutating func encode(_ value: UInt8, forKey key: Key) {
        box.members[key.stringValue] = .value(.int(Int64(value)))
    }
    mutating func encode(_ value: UInt16, forKey key: Key) {
        box.members[key.stringValue] = .value(.int(Int64(value)))
    }
    mutating func encode(_ value: UInt32, forKey key: Key) {
        box.members[key.stringValue] = .value(.int(Int64(value)))
    }
    mutating func encode(_ value: UInt64, forKey key: Key) throws {
        box.members[key.stringValue] = .value(try TreeEncoder.integer(value))
    }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
        box.members[key.stringValue] = try TreeEncoder.slot(for: value)
    }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type, forKey key: Key
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        box.members[key.stringValue] = .object(nested)
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested))
    }

    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        box.members[key.stringValue] = .array(nested)
        return UnkeyedContainer(box: nested)
    }

    // JSONEncoder's spelling: the super value under "super" or under the given key.
    mutating func superEncoder() -> any Encoder {
        let encoder = TreeEncoder()
        box.members["super"] = .deferred(encoder)
        return encoder
    }
    mutating func superEncoder(forKey key: Key) -> any Encoder {
        let encoder = TreeEncoder()
        box.members[key.stringValue] = .deferred(encoder)
        return encoder
    }
}

private struct UnkeyedContainer: UnkeyedEncodingContainer {
    let box: ArrayBox
    var codingPath: [any CodingKey] { [] }
    var count: Int { box.elements.count }

    mutating func encodeNil() { box.elements.append(.value(.null)) }
    mutating func encode(_ value: Bool) { box.elements.append(.value(.bool(value))) }
    mutating func encode(_ value: String) { box.elements.append(.value(.string(value))) }
    mutating func encode(_ value: Double) throws { box.elements.append(.value(try TreeEncoder.finite(value))) }
    mutating func encode(_ value: Float) throws {
        box.elements.append(.value(try TreeEncoder.finite(Double(value))))
    }
    mutating func encode(_ value: Int) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: Int8) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: Int16) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: Int32) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: Int64) { box.elements.append(.value(.int(value))) }
    mutating func encode(_ value: UInt) throws { box.elements.append(.value(try TreeEncoder.integer(value))) }
    mutating func encode(_ value: UInt8) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: UInt16) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: UInt32) { box.elements.append(.value(.int(Int64(value)))) }
    mutating func encode(_ value: UInt64) throws { box.elements.append(.value(try TreeEncoder.integer(value))) }
    mutating func encode<T: Encodable>(_ value: T) throws { box.elements.append(try TreeEncoder.slot(for: value)) }

    mutating func nestedContainer<NestedKey: CodingKey>(
        keyedBy keyType: NestedKey.Type
    ) -> KeyedEncodingContainer<NestedKey> {
        let nested = ObjectBox()
        box.elements.append(.object(nested))
        return KeyedEncodingContainer(KeyedContainer<NestedKey>(box: nested))
    }

    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
        let nested = ArrayBox()
        box.elements.append(.array(nested))
        return UnkeyedContainer(box: nested)
    }

    mutating func superEncoder() -> any Encoder {
        let encoder = TreeEncoder()
        box.elements.append(.deferred(encoder))
        return encoder
    }
}

private struct SingleValueContainer: SingleValueEncodingContainer {
    let encoder: TreeEncoder
    var codingPath: [any CodingKey] { [] }

    mutating func encodeNil() { encoder.slot = .value(.null) }
    mutating func encode(_ value: Bool) { encoder.slot = .value(.bool(value)) }
    mutating func encode(_ value: String) { encoder.slot = .value(.string(value)) }
    mutating func encode(_ value: Double) throws { encoder.slot = .value(try TreeEncoder.finite(value)) }
    mutating func encode(_ value: Float) throws { encoder.slot = .value(try TreeEncoder.finite(Double(value))) }
    mutating func encode(_ value: Int) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int8) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int16) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int32) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: Int64) { encoder.slot = .value(.int(value)) }
    mutating func encode(_ value: UInt) throws { encoder.slot = .value(try TreeEncoder.integer(value)) }
    mutating func encode(_ value: UInt8) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: UInt16) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: UInt32) { encoder.slot = .value(.int(Int64(value))) }
    mutating func encode(_ value: UInt64) throws { encoder.slot = .value(try TreeEncoder.integer(value)) }
    mutating func encode<T: Encodable>(_ value: T) throws { encoder.slot = try TreeEncoder.slot(for: value) }
}
