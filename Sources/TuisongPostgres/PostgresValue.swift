/// One value going to or coming from PostgreSQL.
///
/// Parameters are sent in text format (bytea in binary format, so any bytes go through
/// unescaped); results come back in text format and are decoded by the column's type:
/// `int2`/`int4`/`int8`/`oid` → `.int`, `float4`/`float8` → `.double`, `bool` → `.bool`,
/// `bytea` → `.bytes`, everything else (text, numeric, jsonb, timestamps…) → `.text`.
///
///     try connection.execute("INSERT INTO t (id, name, blob) VALUES ($1, $2, $3)", [.int(1), "名前", .bytes([0, 255])])
public enum PostgresValue: Sendable, Hashable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case bytes([UInt8])
    case bool(Bool)

    public var isNull: Bool { self == .null }

    /// `.int` as is; `.text` that parses as an integer (a `numeric` or `bigint` cast to text).
    public var int64: Int64? {
        switch self {
        case .int(let value): return value
        case .text(let text): return Int64(text)
        default: return nil
        }
    }

    public var int: Int? { int64.flatMap { Int(exactly: $0) } }

    /// `.double`, `.int` widened, or `.text` that parses (a `numeric` column).
    public var double: Double? {
        switch self {
        case .double(let value): return value
        case .int(let value): return Double(value)
        case .text(let text): return Double(text)
        default: return nil
        }
    }

    /// `.text` only: a number is not silently turned into a string.
    public var string: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    public var bytes: [UInt8]? {
        if case .bytes(let value) = self { return value }
        return nil
    }

    public var bool: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }
}

extension PostgresValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByNilLiteral
{
    public init(stringLiteral value: String) { self = .text(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

/// One row of a result: values by column index or name.
///
///     let row = try connection.execute("SELECT id, name FROM t").rows[0]
///     row[0].int64, row["name"]?.string
public struct PostgresRow: Sendable, Hashable {
    public let columns: [String]
    public let values: [PostgresValue]

    public init(columns: [String], values: [PostgresValue]) {
        self.columns = columns
        self.values = values
    }

    public subscript(index: Int) -> PostgresValue { values[index] }

    /// The first column named `name` (names as PostgreSQL reports them: unquoted ones lowercased);
    /// nil when there is no such column.
    public subscript(name: String) -> PostgresValue? {
        columns.firstIndex(of: name).map { values[$0] }
    }
}

/// What one statement returned: its rows (empty for a command) and its command tag.
public struct PostgresResult: Sendable, Hashable {
    public let columns: [String]
    public let rows: [PostgresRow]
    /// "INSERT 0 3", "UPDATE 2", "SELECT 1", "COPY 10000", "BEGIN"…
    public let commandTag: String
    /// Rows inserted, updated, deleted, selected, moved or copied (libpq's `PQcmdTuples`); nil for
    /// a command that counts none.
    public let affectedRows: Int?

    public init(columns: [String] = [], rows: [PostgresRow] = [], commandTag: String = "", affectedRows: Int? = nil) {
        self.columns = columns
        self.rows = rows
        self.commandTag = commandTag
        self.affectedRows = affectedRows
    }
}
