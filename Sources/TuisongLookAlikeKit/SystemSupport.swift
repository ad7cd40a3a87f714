#if canImport(Glibc)
    import Glibc
#endif

/// A failure of the operating system or a C library, with the library's own code and text.
public struct LookAlikeServerError: Error, Sendable, CustomStringConvertible {
    /// Where it failed, e.g. `bind` or `nghttp2_session_server_new`.
    public let operation: String
    /// `errno`, an nghttp2 error code or an OpenSSL error code; 0 when there is none.
    public let code: Int
    /// The library's message for `code`, plus context.
    public let message: String

    public var description: String { "\(operation) failed (\(code)): \(message)" }

    init(operation: String, code: Int, message: String) {
        self.operation = operation
        self.code = code
        self.message = message
    }

    /// From `errno` right after the failing call.
    static func posix(_ operation: String, errno code: Int32 = errno) -> LookAlikeServerError {
        LookAlikeServerError(operation: operation, code: Int(code), message: String(cString: strerror(code)))
    }
}

enum MonotonicClock {
    /// Nanoseconds on CLOCK_MONOTONIC (never jumps, unlike wall time).
    static func nanoseconds() -> UInt64 {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return UInt64(spec.tv_sec) * 1_000_000_000 + UInt64(spec.tv_nsec)
    }
}

package enum WallClock {
    package static func milliseconds() -> Int64 {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        return Int64(spec.tv_sec) * 1000 + Int64(spec.tv_nsec) / 1_000_000
    }
}

/// A growable byte queue on malloc'd memory: bytes are appended at the end and consumed from the
/// front. `SSL_write` may keep pointing into it across a WANT_WRITE (the SSL object is put in
/// ACCEPT_MOVING_WRITE_BUFFER mode), so consumed space is reclaimed only by moving the unread
/// bytes, never by rewriting them.
final class ByteQueue {
    private(set) var storage: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    private var start = 0
    private var end = 0

    init(capacity: Int) {
        self.capacity = capacity
        storage = .allocate(capacity: capacity)
    }

    deinit { storage.deallocate() }

    var count: Int { end - start }
    var isEmpty: Bool { start == end }
    var readable: UnsafeMutablePointer<UInt8> { storage + start }

    func append(_ bytes: UnsafePointer<UInt8>, count: Int) {
        if end + count > capacity {
            let unread = end - start
            if start > 0 {
                (storage).update(from: storage + start, count: unread)
                start = 0
                end = unread
            }
            if end + count > capacity {
                var newCapacity = capacity * 2
                while newCapacity < end + count { newCapacity *= 2 }
                let newStorage = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
                newStorage.update(from: storage, count: end)
                storage.deallocate()
                storage = newStorage
                capacity = newCapacity
            }
        }
        (storage + end).update(from: bytes, count: count)
        end += count
    }

    func consume(_ count: Int) {
        start += count
        if start == end {
            start = 0
            end = 0
        }
    }
}

@available(*, unavailable)
extension ByteQueue: Sendable {}
