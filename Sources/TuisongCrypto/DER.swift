/// The few DER shapes Apple's push certificate extensions use. Only what TuisongCrypto needs:
/// read the children of a SEQUENCE, write strings, sequences and NULL.
enum DER {
    struct Element {
        let tag: UInt8
        let content: ArraySlice<UInt8>
    }

    static let sequenceTag: UInt8 = 0x30
    static let utf8StringTag: UInt8 = 0x0C
    static let printableStringTag: UInt8 = 0x13
    static let ia5StringTag: UInt8 = 0x16
    static let nullTag: UInt8 = 0x05

    /// Parses one element at the start of `bytes`; `nil` if malformed (indefinite lengths,
    /// multi-byte tags and truncation included). Returns the element and what follows it.
    static func element(_ bytes: ArraySlice<UInt8>) -> (Element, rest: ArraySlice<UInt8>)? {
        var index = bytes.startIndex
        guard index < bytes.endIndex else { return nil }
        let tag = bytes[index]
        guard tag & 0x1F != 0x1F else { return nil }
        index += 1
        guard index < bytes.endIndex else { return nil }
        var length = Int(bytes[index])
        index += 1
        if length & 0x80 != 0 {
            let count = length & 0x7F
            guard count >= 1, count <= 4, bytes.endIndex - index >= count else { return nil }
            length = 0
            for _ in 0..<count {
                length = length << 8 | Int(bytes[index])
                index += 1
            }
        }
        guard bytes.endIndex - index >= length else { return nil }
        let end = index + length
        return (Element(tag: tag, content: bytes[index..<end]), bytes[end...])
    }

    /// The children of a SEQUENCE that fills `bytes` exactly; `nil` if it is not one.
    static func sequenceChildren(_ bytes: [UInt8]) -> [Element]? {
        guard let (outer, rest) = element(bytes[...]), outer.tag == sequenceTag, rest.isEmpty else { return nil }
        var children: [Element] = []
        var remaining = outer.content
        while !remaining.isEmpty {
            guard let (child, next) = element(remaining) else { return nil }
            children.append(child)
            remaining = next
        }
        return children
    }

    static func encode(tag: UInt8, content: [UInt8]) -> [UInt8] {
        var out = [tag]
        let length = content.count
        if length < 0x80 {
            out.append(UInt8(length))
        } else {
            var lengthBytes: [UInt8] = []
            var remaining = length
            while remaining > 0 {
                lengthBytes.insert(UInt8(remaining & 0xFF), at: 0)
                remaining >>= 8
            }
            out.append(0x80 | UInt8(lengthBytes.count))
            out += lengthBytes
        }
        return out + content
    }

    static func utf8String(_ s: String) -> [UInt8] { encode(tag: utf8StringTag, content: Array(s.utf8)) }
    static func sequence(_ children: [[UInt8]]) -> [UInt8] {
        encode(tag: sequenceTag, content: children.flatMap { $0 })
    }
}
