/// zlib decompression (RFC 1950 around RFC 1951 DEFLATE), in Swift because a UserSig is
/// zlib-compressed and nothing the plugin may import offers it: Foundation on Linux has no
/// compression API and `TuisongCrypto` wraps OpenSSL, which has none either. Only what a
/// UserSig needs: a whole input in memory, an output bound, the Adler-32 trailer checked.
///
///     let json = try Zlib.decompress(bytes, limit: 16_384)
enum Zlib {
    /// Why the bytes are not a zlib stream (or would inflate past the limit).
    struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        var reason: String
        var description: String { "zlib: \(reason)" }
    }

    /// The decompressed bytes of one complete zlib stream; throws when the header, a block,
    /// the checksum or the length (more than `limit` bytes out) is wrong.
    static func decompress(_ input: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        guard input.count >= 6 else { throw Failure(reason: "stream too short") }
        let cmf = input[0]
        let flg = input[1]
        guard cmf & 0x0F == 8, cmf >> 4 <= 7 else { throw Failure(reason: "not DEFLATE") }
        guard (UInt16(cmf) << 8 | UInt16(flg)) % 31 == 0 else { throw Failure(reason: "header check failed") }
        guard flg & 0x20 == 0 else { throw Failure(reason: "preset dictionaries are not supported") }

        var inflater = Inflater(input: input, start: 2, limit: limit)
        try inflater.run()
        let output = inflater.output
        // The Adler-32 of the output, big-endian, on the byte boundary after the last block.
        let trailer = inflater.bits.bytePosition
        guard trailer + 4 <= input.count else { throw Failure(reason: "missing Adler-32 checksum") }
        let expected = input[trailer..<trailer + 4].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
        guard adler32(output) == expected else { throw Failure(reason: "Adler-32 checksum mismatch") }
        return output
    }

    static func adler32(_ bytes: [UInt8]) -> UInt32 {
        var a: UInt32 = 1
        var b: UInt32 = 0
        for byte in bytes {
            a = (a + UInt32(byte)) % 65_521
            b = (b + a) % 65_521
        }
        return b << 16 | a
    }
}

/// Reads DEFLATE's bit stream: least significant bit first within each byte.
private struct BitReader {
    let input: [UInt8]
    var position: Int
    var buffer: UInt32 = 0
    var count = 0

    init(input: [UInt8], start: Int) {
        self.input = input
        position = start
    }

    /// The index of the first byte not (even partly) consumed, once aligned.
    var bytePosition: Int { position - count / 8 }

    mutating func bits(_ need: Int) throws(Zlib.Failure) -> Int {
        while count < need {
            guard position < input.count else { throw Zlib.Failure(reason: "unexpected end of data") }
            buffer |= UInt32(input[position]) << UInt32(count)
            position += 1
            count += 8
        }
        let value = Int(buffer & ((1 << UInt32(need)) - 1))
        buffer >>= UInt32(need)
        count -= need
        return value
    }

    /// Drops the bits left in the current byte (before a stored block).
    mutating func alignToByte() {
        let drop = count % 8
        buffer >>= UInt32(drop)
        count -= drop
    }
}

/// A canonical Huffman code as counts per length and symbols in code order (the decoding
/// scheme of zlib's `puff.c`, which needs no tables beyond these two arrays).
private struct Huffman {
    var counts = [Int](repeating: 0, count: 16)
    var symbols: [Int]

    /// Builds the code from each symbol's length (0 = unused). Throws when the lengths
    /// over-subscribe the code space; an incomplete code is allowed (as zlib allows it for
    /// a single distance code).
    init(lengths: ArraySlice<Int>) throws(Zlib.Failure) {
        symbols = [Int](repeating: 0, count: lengths.count)
        for length in lengths { counts[length] += 1 }
        var left = 1
        for length in 1..<16 {
            left <<= 1
            left -= counts[length]
            guard left >= 0 else { throw Zlib.Failure(reason: "over-subscribed Huffman code") }
        }
        var offsets = [Int](repeating: 0, count: 16)
        for length in 1..<15 { offsets[length + 1] = offsets[length] + counts[length] }
        for (symbol, length) in lengths.enumerated() where length != 0 {
            symbols[offsets[length]] = symbol
            offsets[length] += 1
        }
    }

    func decode(_ bits: inout BitReader) throws(Zlib.Failure) -> Int {
        var code = 0
        var first = 0
        var index = 0
        for length in 1..<16 {
            code |= try bits.bits(1)
            let count = counts[length]
            if code - first < count { return symbols[index + code - first] }
            index += count
            first = (first + count) << 1
            code <<= 1
        }
        throw Zlib.Failure(reason: "invalid Huffman code")
    }
}

private struct Inflater {
    var bits: BitReader
    var output: [UInt8] = []
    let limit: Int

    init(input: [UInt8], start: Int, limit: Int) {
        bits = BitReader(input: input, start: start)
        self.limit = limit
    }

    static let lengthBase = [
        3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227,
        258,
    ]
    static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    static let distanceBase = [
        1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097,
        6145, 8193, 12289, 16385, 24577,
    ]
    static let distanceExtra = [
        0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13,
    ]
    /// The order in which a dynamic block lists the code-length code's lengths.
    static let codeLengthOrder = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    mutating func run() throws(Zlib.Failure) {
        var last = false
        while !last {
            last = try bits.bits(1) == 1
            switch try bits.bits(2) {
            case 0: try stored()
            case 1:
                let (literals, distances) = try Self.fixed()
                try codes(literals, distances)
            case 2:
                let (literals, distances) = try dynamic()
                try codes(literals, distances)
            default: throw Zlib.Failure(reason: "invalid block type")
            }
        }
        bits.alignToByte()
    }

    private mutating func append(_ byte: UInt8) throws(Zlib.Failure) {
        guard output.count < limit else { throw Zlib.Failure(reason: "inflates past \(limit) bytes") }
        output.append(byte)
    }

    private mutating func stored() throws(Zlib.Failure) {
        bits.alignToByte()
        let length = try bits.bits(16)
        let complement = try bits.bits(16)
        guard length == ~complement & 0xFFFF else { throw Zlib.Failure(reason: "stored block length mismatch") }
        for _ in 0..<length { try append(UInt8(try bits.bits(8))) }
    }

    private static func fixed() throws(Zlib.Failure) -> (Huffman, Huffman) {
        var lengths = [Int](repeating: 8, count: 288)
        for symbol in 144..<256 { lengths[symbol] = 9 }
        for symbol in 256..<280 { lengths[symbol] = 7 }
        return (try Huffman(lengths: lengths[...]), try Huffman(lengths: [Int](repeating: 5, count: 30)[...]))
    }

    private mutating func dynamic() throws(Zlib.Failure) -> (Huffman, Huffman) {
        let literalCount = try bits.bits(5) + 257
        let distanceCount = try bits.bits(5) + 1
        let codeLengthCount = try bits.bits(4) + 4
        guard literalCount <= 286, distanceCount <= 30 else { throw Zlib.Failure(reason: "too many codes") }
        var codeLengthLengths = [Int](repeating: 0, count: 19)
        for index in 0..<codeLengthCount { codeLengthLengths[Self.codeLengthOrder[index]] = try bits.bits(3) }
        let codeLengthCode = try Huffman(lengths: codeLengthLengths[...])

        var lengths: [Int] = []
        lengths.reserveCapacity(literalCount + distanceCount)
        while lengths.count < literalCount + distanceCount {
            let symbol = try codeLengthCode.decode(&bits)
            switch symbol {
            case 0..<16:
                lengths.append(symbol)
            case 16:
                guard let previous = lengths.last else { throw Zlib.Failure(reason: "repeat with no previous length") }
                lengths += [Int](repeating: previous, count: 3 + (try bits.bits(2)))
            case 17:
                lengths += [Int](repeating: 0, count: 3 + (try bits.bits(3)))
            default:
                lengths += [Int](repeating: 0, count: 11 + (try bits.bits(7)))
            }
        }
        guard lengths.count == literalCount + distanceCount else {
            throw Zlib.Failure(reason: "code lengths overrun their count")
        }
        guard lengths[256] != 0 else { throw Zlib.Failure(reason: "no end-of-block code") }
        return (
            try Huffman(lengths: lengths[0..<literalCount]),
            try Huffman(lengths: lengths[literalCount...])
        )
    }

    private mutating func codes(_ literals: Huffman, _ distances: Huffman) throws(Zlib.Failure) {
        while true {
            let symbol = try literals.decode(&bits)
            if symbol < 256 {
                try append(UInt8(symbol))
            } else if symbol == 256 {
                return
            } else {
                let index = symbol - 257
                guard index < 29 else { throw Zlib.Failure(reason: "invalid length symbol") }
                let length = Self.lengthBase[index] + (try bits.bits(Self.lengthExtra[index]))
                let distanceSymbol = try distances.decode(&bits)
                guard distanceSymbol < 30 else { throw Zlib.Failure(reason: "invalid distance symbol") }
                let distance = Self.distanceBase[distanceSymbol] + (try bits.bits(Self.distanceExtra[distanceSymbol]))
                guard distance <= output.count else { throw Zlib.Failure(reason: "distance before the start") }
                for _ in 0..<length { try append(output[output.count - distance]) }
            }
        }
    }
}
