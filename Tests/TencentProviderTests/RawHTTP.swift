import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A minimal HTTP/1.1 client over a real loopback socket that sends exactly the bytes a
/// Tencent client sends: any method with a body (account_check is a GET with a JSON body),
/// no Content-Type unless asked, the target as given (raw or percent-encoded usersig).
struct RawHTTPResponse: Sendable {
    var status: Int
    var body: [UInt8]

    var text: String { String(decoding: body, as: UTF8.self) }
    var json: [String: Any] { (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any] ?? [:] }
    var actionStatus: String? { json["ActionStatus"] as? String }
    var errorCode: Int? { json["ErrorCode"] as? Int }
}

struct RawHTTPError: Error, CustomStringConvertible {
    var description: String
}

func rawHTTP(
    port: Int, method: String, target: String, body: [UInt8], headers: [String: String] = [:]
) async throws -> RawHTTPResponse {
    try await withCheckedThrowingContinuation { continuation in
        Thread.detachNewThread {
            continuation.resume(
                with: Result {
                    try rawHTTPBlocking(port: port, method: method, target: target, body: body, headers: headers)
                })
        }
    }
}

private func rawHTTPBlocking(
    port: Int, method: String, target: String, body: [UInt8], headers: [String: String]
) throws -> RawHTTPResponse {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw RawHTTPError(description: "socket failed") }
    defer { close(fd) }
    var timeout = timeval(tv_sec: 60, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw RawHTTPError(description: "connect failed: \(errno)") }
    var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
    head += "Content-Length: \(body.count)\r\n"
    for (name, value) in headers { head += "\(name): \(value)\r\n" }
    head += "\r\n"
    let request = Array(head.utf8) + body
    var sent = 0
    while sent < request.count {
        let n = request[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
        guard n > 0 else { throw RawHTTPError(description: "send failed: \(errno)") }
        sent += n
    }
    var response: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n == 0 { break }
        guard n > 0 else { throw RawHTTPError(description: "recv failed: \(errno)") }
        response += buffer[0..<n]
    }
    guard let split = response.firstRange(of: Array("\r\n\r\n".utf8)) else {
        throw RawHTTPError(description: "no HTTP head in \(response.count) bytes")
    }
    let headText = String(decoding: response[..<split.lowerBound], as: UTF8.self)
    let statusLine = headText.split(separator: "\r\n").first ?? ""
    let parts = statusLine.split(separator: " ")
    guard parts.count >= 2, let status = Int(parts[1]) else {
        throw RawHTTPError(description: "bad status line \(statusLine)")
    }
    var payload = Array(response[split.upperBound...])
    if headText.lowercased().contains("transfer-encoding: chunked") { payload = dechunk(payload) }
    return RawHTTPResponse(status: status, body: payload)
}

private func dechunk(_ bytes: [UInt8]) -> [UInt8] {
    var out: [UInt8] = []
    var index = 0
    while let lineEnd = bytes[index...].firstRange(of: Array("\r\n".utf8)) {
        let sizeText = String(decoding: bytes[index..<lineEnd.lowerBound], as: UTF8.self)
        guard let size = Int(sizeText.split(separator: ";").first ?? "", radix: 16), size > 0 else { break }
        let start = lineEnd.upperBound
        out += bytes[start..<min(start + size, bytes.count)]
        index = start + size + 2
        guard index < bytes.count else { break }
    }
    return out
}
