import Dispatch

#if canImport(Glibc)
    import Glibc
#endif

/// A resolved socket address (IPv4 or IPv6), copied out of `getaddrinfo`'s list.
struct SocketAddress: Sendable, CustomStringConvertible {
    fileprivate var storage = sockaddr_storage()
    fileprivate(set) var length: socklen_t = 0

    var family: Int32 { Int32(storage.ss_family) }

    func withSockAddr<Result>(_ body: (UnsafePointer<sockaddr>, socklen_t) -> Result) -> Result {
        withUnsafePointer(to: storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { body($0, length) }
        }
    }

    var description: String {
        var host = [CChar](repeating: 0, count: Int(NI_MAXHOST))
        var service = [CChar](repeating: 0, count: Int(NI_MAXSERV))
        let result = withSockAddr { address, length in
            getnameinfo(
                address, length, &host, socklen_t(host.count), &service, socklen_t(service.count),
                NI_NUMERICHOST | NI_NUMERICSERV)
        }
        guard result == 0 else { return "?" }
        let hostText = String(nulTerminated: host)
        return family == AF_INET6
            ? "[\(hostText)]:\(String(nulTerminated: service))"
            : "\(hostText):\(String(nulTerminated: service))"
    }
}

enum Resolver {
    /// Resolves `host:port` to TCP addresses. `getaddrinfo` blocks, so this runs on a Dispatch
    /// worker rather than an event loop thread.
    static func resolve(host: String, port: Int) -> Result<[SocketAddress], HTTP2ClientError> {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_protocol = Int32(IPPROTO_TCP)
        hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let list else {
            let reason =
                status == EAI_SYSTEM
                ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            return .failure(HTTP2ClientError(.connectFailed, "resolve \(host): \(reason)"))
        }
        defer { freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = list
        while let entry = cursor {
            if let address = entry.pointee.ai_addr,
                Int(entry.pointee.ai_addrlen) <= MemoryLayout<sockaddr_storage>.size
            {
                var resolved = SocketAddress()
                withUnsafeMutableBytes(of: &resolved.storage) { target in
                    target.copyMemory(
                        from: UnsafeRawBufferPointer(
                            start: address, count: Int(entry.pointee.ai_addrlen)))
                }
                resolved.length = entry.pointee.ai_addrlen
                addresses.append(resolved)
            }
            cursor = entry.pointee.ai_next
        }
        guard !addresses.isEmpty else {
            return .failure(HTTP2ClientError(.connectFailed, "resolve \(host): no addresses"))
        }
        return .success(addresses)
    }

    static func resolveInBackground(
        host: String, port: Int,
        completion: @escaping @Sendable (Result<[SocketAddress], HTTP2ClientError>) -> Void
    ) {
        DispatchQueue.global().async {
            completion(resolve(host: host, port: port))
        }
    }
}

extension String {
    /// Decodes a NUL-terminated C buffer filled in by a C call.
    init(nulTerminated buffer: [CChar]) {
        let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
        self = String(decoding: bytes, as: UTF8.self)
    }
}
