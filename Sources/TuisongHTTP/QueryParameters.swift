/// Name/value pairs of a query string or an `application/x-www-form-urlencoded` body, in order,
/// percent- and `+`-decoded. A name may repeat.
///
///     // ?tag=a&tag=b&q=hello+world
///     request.query["q"]                // "hello world"
///     request.query.values(for: "tag")  // ["a", "b"]
public struct QueryParameters: Sendable, Sequence, ExpressibleByDictionaryLiteral,
    CustomStringConvertible
{
    public typealias Element = (name: String, value: String)

    private var pairs: [Element]

    public init() {
        pairs = []
    }

    public init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { (name: $0.0, value: $0.1) }
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// Parses `a=1&b=two+words&c` (no leading `?`). A pair without `=` has the value "";
    /// empty pairs (`&&`) are skipped. Throws 400 on a malformed escape or invalid UTF-8.
    public init(parsing encoded: String) throws(HTTPError) {
        self = try withUTF8Bytes(of: encoded) { bytes throws(HTTPError) in
            try QueryParameters(parsing: bytes)
        }
    }

    init(parsing bytes: UnsafeBufferPointer<UInt8>) throws(HTTPError) {
        pairs = []
        var start = 0
        while start <= bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "&") { end += 1 }
            if end > start {
                var separator = start
                while separator < end && bytes[separator] != UInt8(ascii: "=") { separator += 1 }
                let nameBytes = UnsafeBufferPointer(rebasing: bytes[start..<separator])
                let valueBytes =
                    separator < end
                    ? UnsafeBufferPointer(rebasing: bytes[(separator + 1)..<end])
                    : UnsafeBufferPointer(rebasing: bytes[end..<end])
                do {
                    let name = try percentDecode(nameBytes, plusAsSpace: true)
                    let value = try percentDecode(valueBytes, plusAsSpace: true)
                    pairs.append((name: name, value: value))
                } catch {
                    throw HTTPError.badRequest("parameter \(pairs.count + 1): \(error.message)")
                }
            }
            start = end + 1
        }
    }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    /// Every value of `name`, in order.
    public func values(for name: String) -> [String] {
        pairs.filter { $0.name == name }.map(\.value)
    }

    public var isEmpty: Bool { pairs.isEmpty }
    public var count: Int { pairs.count }

    public func makeIterator() -> IndexingIterator<[Element]> {
        pairs.makeIterator()
    }

    public var description: String {
        pairs.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }
}
