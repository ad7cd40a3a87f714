#if canImport(Glibc)
    import Glibc
#endif

/// A bound, listening TCP socket. TuisongHTTP binds it itself (and hands it to MHD with
/// MHD_OPTION_LISTEN_SOCKET) so that a failure reports the exact `errno` of `bind`, and the
/// real port of an ephemeral bind is known.
struct ListeningSocket {
    let descriptor: Int32
    let port: Int
    let isIPv6: Bool
    /// The socket's inode, to recognise it after libmicrohttpd may have closed the descriptor.
    private let inode: UInt64

    init(host: String, port: Int, backlog: Int) throws(HTTPServerError) {
        guard (0...65535).contains(port) else {
            throw HTTPServerError(
                operation: "listen on port \(port)", errno: nil, message: "port out of range")
        }
        let host =
            host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let display = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"

        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var results: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &results)
        guard status == 0, let address = results else {
            throw HTTPServerError(
                operation: "resolve \(host)", errno: nil,
                message: String(cString: gai_strerror(status)))
        }
        defer { freeaddrinfo(results) }

        let family = address.pointee.ai_family
        let descriptor = socket(
            family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { throw .system("socket for \(display)") }
        var yes: Int32 = 1
        _ = setsockopt(
            descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        if family == AF_INET6 {
            _ = setsockopt(
                descriptor, Int32(IPPROTO_IPV6), IPV6_V6ONLY, &yes,
                socklen_t(MemoryLayout<Int32>.size))
        }
        guard bind(descriptor, address.pointee.ai_addr, address.pointee.ai_addrlen) == 0 else {
            let error = HTTPServerError.system("bind \(display)")
            Glibc.close(descriptor)
            throw error
        }
        guard listen(descriptor, Int32(backlog)) == 0 else {
            let error = HTTPServerError.system("listen on \(display)")
            Glibc.close(descriptor)
            throw error
        }
        var bound = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &bound) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                getsockname(descriptor, $0, &length)
            }
        }
        guard named == 0 else {
            let error = HTTPServerError.system("getsockname for \(display)")
            Glibc.close(descriptor)
            throw error
        }
        let networkPort: UInt16 = withUnsafePointer(to: &bound) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    $0.pointee.sin6_port
                }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_port }
            }
        }
        var info = stat()
        _ = fstat(descriptor, &info)
        self.descriptor = descriptor
        self.port = Int(UInt16(bigEndian: networkPort))
        self.isIPv6 = family == AF_INET6
        self.inode = UInt64(info.st_ino)
    }

    /// After a failed MHD_start_daemon: libmicrohttpd closes the listening socket on some
    /// failure paths (e.g. TLS set-up) and not on others (option checks). Close it only if
    /// the descriptor still refers to this very socket, never to one another thread opened
    /// since under the same number.
    func closeIfStillOurs() {
        var info = stat()
        guard fstat(descriptor, &info) == 0, UInt64(info.st_ino) == inode,
            info.st_mode & S_IFMT == S_IFSOCK
        else { return }
        Glibc.close(descriptor)
    }
}
