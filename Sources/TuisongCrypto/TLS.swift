internal import COpenSSL
internal import CTuisongShims
import Foundation

/// A configured TLS context (`SSL_CTX`): TLS 1.2 or newer, ALPN, trust and identity.
/// Build one per client credential or per listening server, then make a
/// `TLSConnection` per socket.
public final class TLSContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX is fully configured in the factory methods and never
    // mutated afterwards; OpenSSL allows creating SSL objects from one SSL_CTX on many threads.

    package let sslCtx: OpaquePointer
    /// The ALPN protocols offered (client) or accepted in preference order (server).
    public let alpn: [String]
    public let isServer: Bool
    /// Server only: the wire-format ALPN list the select callback reads. Kept alive by this
    /// object; every `TLSConnection` retains its `TLSContext`, so the callback never sees it freed.
    private let alpnSelection: ALPNSelection?

    private init(sslCtx: OpaquePointer, alpn: [String], isServer: Bool, alpnSelection: ALPNSelection?) {
        self.sslCtx = sslCtx
        self.alpn = alpn
        self.isServer = isServer
        self.alpnSelection = alpnSelection
    }

    deinit { SSL_CTX_free(sslCtx) }

    /// A client context with peer verification ON.
    ///
    /// - Parameters:
    ///   - alpn: protocols to offer, e.g. `["h2"]`.
    ///   - trustSystemCAs: trust the system store (`/etc/ssl/certs`), as for api.push.apple.com
    ///     (`SystemTrust`: what the default verify paths trust, the file parsed once per process).
    ///   - caFile: an extra PEM file of trusted CAs.
    ///   - caCertificates: extra trusted CAs (e.g. a look-alike's throwaway CA).
    ///   - clientCertificate, clientKey, clientChain: certificate authentication; the
    ///     certificate and key must both be given and belong together (`keyMismatch`).
    public static func client(
        alpn: [String], trustSystemCAs: Bool = true, caFile: String? = nil, caCertificates: [Certificate] = [],
        clientCertificate: Certificate? = nil, clientKey: PrivateKey? = nil, clientChain: [Certificate] = []
    ) throws(CryptoError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_client_method()) else { throw .drained(.openssl, "SSL_CTX_new failed") }
        let context = TLSContext(sslCtx: ctx, alpn: alpn, isServer: false, alpnSelection: nil)
        try context.applyCommonSettings()
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
        if trustSystemCAs {
            guard let store = SSL_CTX_get_cert_store(ctx) else { throw .drained(.openssl, "no certificate store") }
            try SystemTrust.add(to: store)
        }
        if let caFile, SSL_CTX_load_verify_locations(ctx, caFile, nil) != 1 {
            throw .drained(.corruptInput, "cannot load CA file \(caFile)")
        }
        try context.trust(caCertificates)
        if !alpn.isEmpty {
            let wire = try ALPNSelection.wire(alpn)
            // Unlike most of OpenSSL, SSL_CTX_set_alpn_protos returns 0 on success.
            guard SSL_CTX_set_alpn_protos(ctx, wire, UInt32(wire.count)) == 0 else {
                throw .drained(.openssl, "SSL_CTX_set_alpn_protos failed")
            }
        }
        switch (clientCertificate, clientKey) {
        case (nil, nil):
            break
        case (let certificate?, let key?):
            try context.useIdentity(certificate: certificate, key: key, chain: clientChain)
        default:
            throw CryptoError(.wrongKind, "a client certificate needs both the certificate and its private key")
        }
        return context
    }

    /// A server context presenting `certificate`, selecting from `alpn` in its order of
    /// preference (so `["h2", "http/1.1"]` picks h2 whenever the client offers it; no overlap
    /// means no ALPN).
    ///
    /// `clientCertificateCAs`: `nil` asks for no client certificate. Otherwise a client
    /// certificate is requested (not required); a non-empty list verifies it against those
    /// CAs (an untrusted one fails the handshake); an empty list accepts any certificate
    /// unverified so the caller can judge it itself (a look-alike refuses one in its service's
    /// own words).
    public static func server(
        certificate: Certificate, key: PrivateKey, chain: [Certificate] = [], alpn: [String],
        clientCertificateCAs: [Certificate]? = nil
    ) throws(CryptoError) -> TLSContext {
        guard let ctx = SSL_CTX_new(TLS_server_method()) else { throw .drained(.openssl, "SSL_CTX_new failed") }
        let selection = alpn.isEmpty ? nil : ALPNSelection(wire: try ALPNSelection.wire(alpn))
        let context = TLSContext(sslCtx: ctx, alpn: alpn, isServer: true, alpnSelection: selection)
        try context.applyCommonSettings()
        try context.useIdentity(certificate: certificate, key: key, chain: chain)
        if let selection {
            SSL_CTX_set_alpn_select_cb(ctx, ALPNSelection.callback, Unmanaged.passUnretained(selection).toOpaque())
        }
        // Session resumption with client certificates needs a session id context.
        let sessionContext = Array("tuisong".utf8)
        guard SSL_CTX_set_session_id_context(ctx, sessionContext, UInt32(sessionContext.count)) == 1 else {
            throw .drained(.openssl, "SSL_CTX_set_session_id_context failed")
        }
        if let cas = clientCertificateCAs {
            if cas.isEmpty {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, TLSContext.acceptAnyCertificate)
            } else {
                SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nil)
                try context.trust(cas)
                for ca in cas where SSL_CTX_add_client_CA(ctx, ca.x509) != 1 {
                    throw .drained(.openssl, "SSL_CTX_add_client_CA failed")
                }
            }
        }
        return context
    }

    /// `SSL_verify_cb` that accepts every chain (the result stays readable through
    /// `SSL_get_verify_result`).
    private static let acceptAnyCertificate: @convention(c) (Int32, OpaquePointer?) -> Int32 = { _, _ in 1 }

    private func applyCommonSettings() throws(CryptoError) {
        guard tuisong_openssl_ctx_set_min_proto_version(sslCtx, TLS1_2_VERSION) == 1 else {
            throw .drained(.openssl, "cannot require TLS 1.2")
        }
        // Non-blocking I/O: a partial SSL_write is fine, and a retry may come from another
        // buffer address (the caller's HTTP/2 output buffer moves between attempts).
        _ = tuisong_openssl_ctx_set_mode(
            sslCtx, Int(SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER))
    }

    /// The certificates this context's store trusts (for tests and diagnostics).
    var trustedCertificates: [Certificate] {
        guard let store = SSL_CTX_get_cert_store(sslCtx), let all = X509_STORE_get1_all_certs(store) else { return [] }
        defer { tuisong_openssl_x509_stack_free_all(all) }
        return (0..<tuisong_openssl_x509_stack_count(all)).compactMap { index in
            tuisong_openssl_x509_stack_value(all, index).map { Certificate(retaining: $0) }
        }
    }

    private func trust(_ certificates: [Certificate]) throws(CryptoError) {
        guard !certificates.isEmpty else { return }
        guard let store = SSL_CTX_get_cert_store(sslCtx) else { throw .drained(.openssl, "no certificate store") }
        for certificate in certificates where X509_STORE_add_cert(store, certificate.x509) != 1 {
            throw .drained(.openssl, "cannot trust \(certificate.subject)")
        }
    }

    private func useIdentity(certificate: Certificate, key: PrivateKey, chain: [Certificate]) throws(CryptoError) {
        guard certificate.matches(key) else {
            throw CryptoError(.keyMismatch, "the private key does not belong to \(certificate.subject)")
        }
        guard SSL_CTX_use_certificate(sslCtx, certificate.x509) == 1 else {
            throw .drained(.openssl, "SSL_CTX_use_certificate failed")
        }
        guard SSL_CTX_use_PrivateKey(sslCtx, key.evpPKey) == 1, SSL_CTX_check_private_key(sslCtx) == 1 else {
            throw .drained(.keyMismatch, "SSL_CTX_use_PrivateKey failed")
        }
        for member in chain where tuisong_openssl_ctx_add1_chain_cert(sslCtx, member.x509) != 1 {
            throw .drained(.openssl, "cannot add \(member.subject) to the chain")
        }
    }
}

/// The server's ALPN preference list in wire format (length-prefixed), at a stable address
/// for the select callback.
final class ALPNSelection: @unchecked Sendable {
    // @unchecked Sendable: the buffer is written once in init and only read afterwards.
    let buffer: UnsafeMutableBufferPointer<UInt8>

    init(wire: [UInt8]) {
        buffer = .allocate(capacity: wire.count)
        _ = buffer.initialize(from: wire)
    }

    deinit { buffer.deallocate() }

    static func wire(_ protocols: [String]) throws(CryptoError) -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard !bytes.isEmpty, bytes.count <= 255 else {
                throw CryptoError(.corruptInput, "invalid ALPN protocol \(name.debugDescription)")
            }
            wire.append(UInt8(bytes.count))
            wire += bytes
        }
        return wire
    }

    /// `SSL_CTX_alpn_select_cb_func`: the first server protocol the client also offers.
    /// OpenSSL copies the selection, so pointing into our buffer is safe.
    static let callback:
        @convention(c) (
            OpaquePointer?, UnsafeMutablePointer<UnsafePointer<UInt8>?>?, UnsafeMutablePointer<UInt8>?,
            UnsafePointer<UInt8>?, UInt32, UnsafeMutableRawPointer?
        ) -> Int32 = { _, out, outLength, clientList, clientLength, context in
            guard let out, let outLength, let clientList, let context else { return SSL_TLSEXT_ERR_NOACK }
            let selection = Unmanaged<ALPNSelection>.fromOpaque(context).takeUnretainedValue()
            var chosen: UnsafeMutablePointer<UInt8>?
            let result = SSL_select_next_proto(
                &chosen, outLength, selection.buffer.baseAddress, UInt32(selection.buffer.count), clientList,
                clientLength)
            guard result == OPENSSL_NPN_NEGOTIATED, let chosen else { return SSL_TLSEXT_ERR_NOACK }
            out.pointee = UnsafePointer(chosen)
            return SSL_TLSEXT_ERR_OK
        }
}

/// What one non-blocking TLS step did.
package enum TLSIOResult {
    /// Finished; for read/write the number of bytes moved (0 for a finished handshake).
    case done(Int)
    /// Call again when the socket is readable.
    case wantRead
    /// Call again when the socket is writable.
    case wantWrite
    /// The peer closed the TLS session cleanly (close_notify) or the socket hit EOF.
    case closed
    case failed(CryptoError)
}

/// One TLS session (`SSL`) on a socket. Use from one thread at a time; the owning HTTP/2
/// connection serialises access. Holds its `TLSContext` so the context's callbacks outlive it.
///
/// OpenSSL writes with plain `write(2)`, so a peer that vanished raises SIGPIPE: a process
/// using this must ignore SIGPIPE (`signal(SIGPIPE, SIG_IGN)`) and will then see `.closed`.
package final class TLSConnection {
    package let ssl: OpaquePointer
    package let context: TLSContext

    /// - Parameters:
    ///   - fileDescriptor: a connected (client) or accepted (server) socket; not owned.
    ///   - serverName: client only: sent as SNI when it is a DNS name, and the peer
    ///     certificate must match it (DNS SAN/CN, or IP SAN for an IP literal).
    package init(context: TLSContext, fileDescriptor: Int32, serverName: String? = nil) throws(CryptoError) {
        guard let ssl = SSL_new(context.sslCtx) else { throw .drained(.openssl, "SSL_new failed") }
        self.ssl = ssl
        self.context = context
        guard SSL_set_fd(ssl, fileDescriptor) == 1 else { throw .drained(.openssl, "SSL_set_fd failed") }
        if context.isServer {
            SSL_set_accept_state(ssl)
            return
        }
        SSL_set_connect_state(ssl)
        guard let serverName else { return }
        if isIPAddress(serverName) {
            // RFC 6066 forbids IP literals in SNI; verify the IP SAN instead.
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), serverName) == 1 else {
                throw .drained(.openssl, "cannot verify IP \(serverName)")
            }
        } else {
            guard tuisong_openssl_set_tlsext_host_name(ssl, serverName) == 1 else {
                throw .drained(.openssl, "cannot set SNI \(serverName)")
            }
            SSL_set_hostflags(ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(ssl, serverName) == 1 else {
                throw .drained(.openssl, "cannot verify host \(serverName)")
            }
        }
    }

    deinit { SSL_free(ssl) }

    package func handshake() -> TLSIOResult {
        let result = SSL_do_handshake(ssl)
        return result == 1 ? .done(0) : status(result, operation: "TLS handshake")
    }

    package func read(into buffer: UnsafeMutableRawBufferPointer) -> TLSIOResult {
        var count = 0
        let result = SSL_read_ex(ssl, buffer.baseAddress, buffer.count, &count)
        return result == 1 ? .done(count) : status(result, operation: "TLS read")
    }

    package func write(_ bytes: UnsafeRawBufferPointer) -> TLSIOResult {
        guard !bytes.isEmpty else { return .done(0) }
        var count = 0
        let result = SSL_write_ex(ssl, bytes.baseAddress, bytes.count, &count)
        return result == 1 ? .done(count) : status(result, operation: "TLS write")
    }

    /// Sends close_notify (once; best effort on a non-blocking socket).
    package func shutdown() {
        _ = SSL_shutdown(ssl)
        OpenSSLErrorQueue.clear()
    }

    /// Decrypted bytes already buffered inside OpenSSL: read them before waiting on the
    /// socket again, or they sit there until the peer sends more.
    package var pendingBytes: Int { Int(SSL_pending(ssl)) }

    /// The protocol ALPN settled on (`"h2"`), or nil.
    package var negotiatedALPN: String? {
        var data: UnsafePointer<UInt8>?
        var length: UInt32 = 0
        SSL_get0_alpn_selected(ssl, &data, &length)
        guard let data, length > 0 else { return nil }
        return String(decoding: UnsafeBufferPointer(start: data, count: Int(length)), as: UTF8.self)
    }

    /// The certificate the peer presented, if any.
    package var peerCertificate: Certificate? {
        guard let x509 = SSL_get1_peer_certificate(ssl) else { return nil }
        return Certificate(owning: x509)
    }

    /// The peer certificate chain as sent (server side: without the leaf).
    package var peerChain: [Certificate] {
        guard let stack = SSL_get_peer_cert_chain(ssl) else { return [] }
        return (0..<tuisong_openssl_x509_stack_count(stack)).compactMap { index in
            tuisong_openssl_x509_stack_value(stack, index).map { Certificate(retaining: $0) }
        }
    }

    /// nil when the peer's certificate chain verified (or none was checked), else why not.
    package var verificationFailure: String? {
        let code = SSL_get_verify_result(ssl)
        guard code != X509_V_OK else { return nil }
        return String(cString: X509_verify_cert_error_string(code))
    }

    /// "TLSv1.3", "TLSv1.2".
    package var protocolVersion: String { String(cString: SSL_get_version(ssl)) }

    /// OpenSSL's reasons for alerts received from the peer about our certificate: 1000 + the
    /// TLS alert number (bad_certificate 42, unsupported_certificate 43, certificate_revoked
    /// 44, certificate_expired 45, certificate_unknown 46, unknown_ca 48, access_denied 49,
    /// certificate_required 116). With TLS 1.3 the alert arrives after the client's handshake
    /// finished, on the first read, so reads are checked as well as the handshake.
    private static let certificateRejectionReasons: Set<Int32> = [1042, 1043, 1044, 1045, 1046, 1048, 1049, 1116]

    static func isCertificateRejection(_ packed: UInt) -> Bool {
        ERR_GET_LIB(packed) == ERR_LIB_SSL && certificateRejectionReasons.contains(ERR_GET_REASON(packed))
    }

    private func status(_ result: Int32, operation: String) -> TLSIOResult {
        let error = SSL_get_error(ssl, result)
        switch error {
        case SSL_ERROR_WANT_READ:
            return .wantRead
        case SSL_ERROR_WANT_WRITE:
            return .wantWrite
        case SSL_ERROR_ZERO_RETURN:
            OpenSSLErrorQueue.clear()
            return .closed
        case SSL_ERROR_SYSCALL:
            let systemError = errno
            let queued = OpenSSLErrorQueue.drain()
            if queued.isEmpty && (systemError == 0 || systemError == ECONNRESET || systemError == EPIPE) {
                return .closed
            }
            let detail = queued.map(\.text).joined(separator: "; ")
            return .failed(
                CryptoError(
                    .openssl,
                    "\(operation): socket error \(systemError) (\(String(cString: strerror(systemError)))) \(detail)",
                    opensslErrorCodes: queued.map(\.code)))
        default:
            if let failure = verificationFailure {
                return .failed(.drained(.verificationFailed, "\(operation): peer certificate rejected: \(failure)"))
            }
            let queued = OpenSSLErrorQueue.drain()
            let detail = queued.isEmpty ? "" : " [openssl: \(queued.map(\.text).joined(separator: "; "))]"
            let code: CryptoError.Code =
                queued.contains { Self.isCertificateRejection($0.code) }
                ? .certificateRejectedByPeer : .openssl
            return .failed(
                CryptoError(
                    code, "\(operation) failed (SSL_get_error \(error))\(detail)", opensslErrorCodes: queued.map(\.code)
                ))
        }
    }
}

@available(*, unavailable)
extension TLSConnection: Sendable {}
