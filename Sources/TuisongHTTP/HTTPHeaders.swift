/// Header fields in the order they were received or added. Names compare ASCII
/// case-insensitively; values are kept verbatim.
///
///     var headers: HTTPHeaders = ["Content-Type": "text/plain"]
///     headers.add(name: "Set-Cookie", value: "a=1")
///     headers["content-type"]  // "text/plain"
public struct HTTPHeaders: Sendable, Sequence, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral, CustomStringConvertible
{
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    public init() {
        fields = []
    }

    public init(_ fields: [(String, String)]) {
        self.fields = fields.map { (name: $0.0, value: $0.1) }
    }

    public init(arrayLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    init(reservingCapacity capacity: Int) {
        fields = []
        fields.reserveCapacity(capacity)
    }

    /// The first value of the field `name`, or nil.
    public subscript(name: String) -> String? {
        for field in fields where asciiCaseInsensitiveEquals(field.name, name) {
            return field.value
        }
        return nil
    }

    /// Every value of the field `name`, in order.
    public func values(for name: String) -> [String] {
        fields.filter { asciiCaseInsensitiveEquals($0.name, name) }.map(\.value)
    }

    public func contains(name: String) -> Bool {
        fields.contains { asciiCaseInsensitiveEquals($0.name, name) }
    }

    /// Appends a field, keeping any existing field of the same name (e.g. `Set-Cookie`).
    public mutating func add(name: String, value: String) {
        fields.append((name: name, value: value))
    }

    /// Sets the field `name` to `value`: the first existing field is replaced in place and any
    /// further ones removed; if there is none, the field is appended.
    public mutating func replaceOrAdd(name: String, value: String) {
        guard let first = fields.firstIndex(where: { asciiCaseInsensitiveEquals($0.name, name) })
        else {
            fields.append((name: name, value: value))
            return
        }
        fields[first] = (name: name, value: value)
        var index = fields.index(after: first)
        while index < fields.endIndex {
            if asciiCaseInsensitiveEquals(fields[index].name, name) {
                fields.remove(at: index)
            } else {
                index = fields.index(after: index)
            }
        }
    }

    /// Removes every field named `name`.
    public mutating func remove(name: String) {
        fields.removeAll { asciiCaseInsensitiveEquals($0.name, name) }
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[Element]> {
        fields.makeIterator()
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }
}

/// Compares two strings byte by byte, folding ASCII letters only, as HTTP field names require.
func asciiCaseInsensitiveEquals(_ lhs: String, _ rhs: String) -> Bool {
    var lhs = lhs
    var rhs = rhs
    return lhs.withUTF8 { left in
        rhs.withUTF8 { right in
            guard left.count == right.count else { return false }
            for index in 0..<left.count where left[index] != right[index] {
                let folded = left[index] | 0x20
                guard folded == right[index] | 0x20, folded >= 0x61, folded <= 0x7A else {
                    return false
                }
            }
            return true
        }
    }
}
