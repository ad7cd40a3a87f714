internal import COpenSSL

/// An owned OpenSSL memory BIO: the way PEM/DER text goes in and out of OpenSSL.
final class MemoryBIO {
    let pointer: OpaquePointer

    /// An empty, writable memory BIO.
    init() throws(CryptoError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw .drained(.openssl, "BIO_new failed") }
        pointer = bio
    }

    /// A writable memory BIO pre-filled with `bytes` (copied, so the BIO owns its data).
    convenience init(bytes: [UInt8]) throws(CryptoError) {
        try self.init()
        if bytes.isEmpty { return }
        let written = bytes.withUnsafeBytes { BIO_write(pointer, $0.baseAddress, Int32($0.count)) }
        guard written == Int32(bytes.count) else { throw .drained(.openssl, "BIO_write failed") }
    }

    deinit { BIO_free(pointer) }

    /// Everything written to the BIO so far, consumed.
    func readAll() -> [UInt8] {
        let pending = Int(BIO_ctrl_pending(pointer))
        guard pending > 0 else { return [] }
        var out = [UInt8](repeating: 0, count: pending)
        let read = out.withUnsafeMutableBytes { BIO_read(pointer, $0.baseAddress, Int32(pending)) }
        return Array(out.prefix(max(0, Int(read))))
    }

    func readString() -> String { String(decoding: readAll(), as: UTF8.self) }
}

/// Serialises with an `i2d_*` function: first call for the length, second to fill.
func derEncode(_ encode: (UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>?) -> Int32) throws(CryptoError) -> [UInt8]
{
    let length = encode(nil)
    guard length > 0 else { throw .drained(.openssl, "DER encoding failed") }
    var out = [UInt8](repeating: 0, count: Int(length))
    let written = out.withUnsafeMutableBufferPointer { buffer -> Int32 in
        var cursor: UnsafeMutablePointer<UInt8>? = buffer.baseAddress
        return encode(&cursor)
    }
    guard written == length else { throw .drained(.openssl, "DER encoding failed") }
    return out
}
