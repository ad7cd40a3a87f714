import Foundation
import TuisongHTTPClient

/// Which addresses a webhook may reach when `webhooks.allow_private_networks` is false: not
/// loopback, private, carrier-grade NAT, link-local (cloud metadata at 169.254.169.254 and
/// fd00:ec2::254), unique-local, multicast, reserved or unspecified ones, nor IPv6 forms that
/// embed such an IPv4 address. Checked when an endpoint is created or changed (every address
/// its host resolves to) and by the HTTP client before every connection it opens
/// (`HTTPClient.Configuration.connectAddressPolicy`), so a name that resolves elsewhere later
/// (DNS rebinding) is still refused.
enum WebhookAddressRules {
    static func isPublic(_ address: ConnectAddress) -> Bool {
        let b = address.bytes
        if b.count == 4 { return isPublicIPv4(b) }
        guard b.count == 16 else { return false }
        // ::ffff:a.b.c.d (mapped), 64:ff9b::a.b.c.d (NAT64), ::a.b.c.d (compatible): the IPv4 inside decides.
        let v4 = Array(b[12..<16])
        if b[0..<10].allSatisfy({ $0 == 0 }) && b[10] == 0xff && b[11] == 0xff { return isPublicIPv4(v4) }
        if b[0..<12] == [0x00, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0][...] { return isPublicIPv4(v4) }
        if b[0..<12].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1 and IPv4-compatible
        switch b[0] {
        case 0xfc, 0xfd: return false  // unique local fc00::/7 (fd00::/8 included)
        case 0xff: return false  // multicast
        case 0xfe where b[1] & 0xc0 == 0x80 || b[1] & 0xc0 == 0xc0: return false  // fe80::/10 link-local, fec0::/10
        default: break
        }
        if b[0] == 0x20, b[1] == 0x01, b[2] == 0x0d, b[3] == 0xb8 { return false }  // 2001:db8::/32 documentation
        return true
    }

    static func isPublicIPv4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1]) {
        case (0, _), (10, _), (127, _): return false
        case (100, 64...127): return false  // carrier-grade NAT
        case (169, 254): return false  // link-local, cloud metadata
        case (172, 16...31): return false
        case (192, 168): return false
        case (192, 0) where b[2] == 0 || b[2] == 2: return false  // IETF protocol assignments, TEST-NET-1
        case (198, 18...19): return false  // benchmarking
        case (198, 51) where b[2] == 100, (203, 0) where b[2] == 113: return false  // TEST-NET-2, -3
        case (224...255, _): return false  // multicast, reserved, broadcast
        default: return true
        }
    }

    /// Every address `host` resolves to now (or the literal address it is), for the check at
    /// creation. Throws a sentence when it does not resolve.
    static func resolve(_ host: String) throws -> [ConnectAddress] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var result: UnsafeMutablePointer<addrinfo>?
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let status = getaddrinfo(bare, nil, &hints, &result)
        guard status == 0, let first = result else {
            throw WebhookError(400, "invalid_url", "the endpoint's host \(host) does not resolve")
        }
        defer { freeaddrinfo(result) }
        var addresses: [ConnectAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let entry = cursor {
            if let sockaddrPointer = entry.pointee.ai_addr {
                switch entry.pointee.ai_family {
                case AF_INET:
                    let v4 = UnsafeRawPointer(sockaddrPointer).loadUnaligned(as: sockaddr_in.self)
                    addresses.append(withUnsafeBytes(of: v4.sin_addr) { ConnectAddress(bytes: Array($0), port: 0) })
                case AF_INET6:
                    let v6 = UnsafeRawPointer(sockaddrPointer).loadUnaligned(as: sockaddr_in6.self)
                    addresses.append(withUnsafeBytes(of: v6.sin6_addr) { ConnectAddress(bytes: Array($0), port: 0) })
                default: break
                }
            }
            cursor = entry.pointee.ai_next
        }
        return addresses
    }
}
