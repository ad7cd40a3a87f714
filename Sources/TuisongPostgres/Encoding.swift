internal import CPostgres

#if canImport(Glibc)
    import Glibc
#endif

/// Type OIDs from PostgreSQL's `pg_type` catalogue (stable across versions).
enum TypeOID {
    static let unknown: Oid = 0
    static let bool: Oid = 16
    static let bytea: Oid = 17
    static let int8: Oid = 20
    static let int2: Oid = 21
    static let int4: Oid = 23
    static let oid: Oid = 26
    static let float4: Oid = 700
    static let float8: Oid = 701
}

/// Parameters as libpq's four parallel arrays. Text values go NUL-terminated in text format;
/// bytea goes in binary format (its raw bytes, with a length), so no escaping can go wrong.
final class EncodedParameters {
    private var values: [UnsafeMutablePointer<CChar>?] = []
    private var lengths: [Int32] = []
    private var formats: [Int32] = []
    private var types: [Oid] = []

    /// The type a parameter is sent with: integers `int8`, doubles `float8`, booleans `bool`,
    /// bytes `bytea`; text and NULL unknown (the server reads them as the statement needs).
    static func type(of parameter: PostgresValue) -> Oid {
        switch parameter {
        case .null, .text: TypeOID.unknown
        case .int: TypeOID.int8
        case .double: TypeOID.float8
        case .bool: TypeOID.bool
        case .bytes: TypeOID.bytea
        }
    }

    init(_ parameters: [PostgresValue]) {
        for parameter in parameters {
            let type = Self.type(of: parameter)
            switch parameter {
            case .null:
                append(nil, length: 0, format: 0, type: type)
            case .int(let value):
                append(strdup(String(value)), length: 0, format: 0, type: type)
            case .double(let value):
                append(strdup(TextDecoding.text(value)), length: 0, format: 0, type: type)
            case .bool(let value):
                append(strdup(value ? "t" : "f"), length: 0, format: 0, type: type)
            case .text(let value):
                append(strdup(value), length: 0, format: 0, type: type)
            case .bytes(let value):
                let copy = UnsafeMutablePointer<CChar>.allocate(capacity: max(1, value.count))
                value.withUnsafeBytes { raw in
                    if let base = raw.baseAddress {
                        UnsafeMutableRawPointer(copy).copyMemory(from: base, byteCount: raw.count)
                    }
                }
                append(copy, length: Int32(value.count), format: 1, type: type)
            }
        }
    }

    private func append(_ value: UnsafeMutablePointer<CChar>?, length: Int32, format: Int32, type: Oid) {
        values.append(value)
        lengths.append(length)
        formats.append(format)
        types.append(type)
    }

    deinit {
        // strdup'd and allocate'd memory alike: free() is right for the first, and
        // UnsafeMutablePointer.allocate is malloc on Linux, but stay exact.
        for (index, value) in values.enumerated() {
            guard let value else { continue }
            if formats[index] == 1 { value.deallocate() } else { free(value) }
        }
    }

    func withArrays<R>(
        _ body: (
            UnsafePointer<Oid>?, UnsafePointer<UnsafePointer<CChar>?>?, UnsafePointer<Int32>?, UnsafePointer<Int32>?
        ) -> R
    ) -> R {
        let constValues = values.map { UnsafePointer($0) }
        return types.withUnsafeBufferPointer { types in
            constValues.withUnsafeBufferPointer { values in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        body(types.baseAddress, values.baseAddress, lengths.baseAddress, formats.baseAddress)
                    }
                }
            }
        }
    }
}

/// PostgreSQL's text format, both ways.
enum TextDecoding {
    static func value(_ bytes: UnsafeRawBufferPointer, type: Oid) -> PostgresValue {
        switch type {
        case TypeOID.int2, TypeOID.int4, TypeOID.int8, TypeOID.oid:
            let text = String(decoding: bytes, as: UTF8.self)
            return Int64(text).map(PostgresValue.int) ?? .text(text)
        case TypeOID.float4, TypeOID.float8:
            let text = String(decoding: bytes, as: UTF8.self)
            return double(text).map(PostgresValue.double) ?? .text(text)
        case TypeOID.bool:
            return .bool(bytes.first == UInt8(ascii: "t"))
        case TypeOID.bytea:
            return .bytes(bytea(bytes))
        default:
            return .text(String(decoding: bytes, as: UTF8.self))
        }
    }

    static func double(_ text: String) -> Double? {
        switch text {
        case "Infinity": .infinity
        case "-Infinity": -.infinity
        case "NaN": .nan
        default: Double(text)
        }
    }

    /// The spellings float8in reads back exactly (Swift's description is the shortest exact form).
    static func text(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value < 0 ? "-Infinity" : "Infinity" }
        return "\(value)"
    }

    /// bytea's hex output (`\x0aff`, the default `bytea_output` since 9.0); the older escape
    /// format goes through libpq's `PQunescapeBytea`.
    static func bytea(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        if bytes.count >= 2, bytes[0] == UInt8(ascii: "\\"), bytes[1] == UInt8(ascii: "x") {
            var output: [UInt8] = []
            output.reserveCapacity((bytes.count - 2) / 2)
            var index = 2
            while index + 1 < bytes.count {
                output.append(nibble(bytes[index]) << 4 | nibble(bytes[index + 1]))
                index += 2
            }
            return output
        }
        let text = Array(bytes) + [0]
        var length = 0
        guard let decoded = PQunescapeBytea(text, &length) else { return [] }
        defer { PQfreemem(decoded) }
        return Array(UnsafeBufferPointer(start: decoded, count: length))
    }

    private static func nibble(_ byte: UInt8) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: 0
        }
    }

    /// Appends one row in COPY's text format: columns split by tab, `\N` for NULL, backslash,
    /// newline, carriage return and tab escaped, the row ended by a newline.
    static func appendCopyRow(_ row: [String?], to buffer: inout [UInt8]) {
        for (index, column) in row.enumerated() {
            if index > 0 { buffer.append(UInt8(ascii: "\t")) }
            guard let column else {
                buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "N")])
                continue
            }
            for byte in column.utf8 {
                switch byte {
                case UInt8(ascii: "\\"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
                case UInt8(ascii: "\n"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case UInt8(ascii: "\r"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                case UInt8(ascii: "\t"): buffer.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
                default: buffer.append(byte)
                }
            }
        }
        buffer.append(UInt8(ascii: "\n"))
    }
}
