internal import COpenSSL
internal import CTuisongShims
import Foundation
import Synchronization

/// The system's trusted CAs, where `SSL_CTX_set_default_verify_paths` finds them — the file
/// `SSL_CERT_FILE` names or OpenSSL's default (`/usr/lib/ssl/cert.pem`, Debian's
/// ca-certificates.crt: 139 CAs) and the hashed directory `SSL_CERT_DIR` names or OpenSSL's
/// default — with the file parsed once per process rather than once per context.
///
/// Parsing that file cost 49 ms of CPU a context; the test suite made ~370 client contexts
/// (a gateway per test, each APNs credential its own): 9 s of the test process's CPU came off
/// (perf, issue #46).
/// Copying the parsed certificates into a new context's store costs about 1 ms. The file is
/// read again when it changes (another inode, size or modification time), so a context made
/// after `update-ca-certificates` trusts what a fresh `SSL_CTX_set_default_verify_paths`
/// would.
enum SystemTrust {
    /// Adds the system's CAs to `store`: the default file's certificates, and the default
    /// directory looked up by subject hash as OpenSSL does. A missing file or directory adds
    /// nothing, as with `SSL_CTX_set_default_verify_paths`.
    static func add(to store: OpaquePointer) throws(CryptoError) {
        for certificate in try certificates() where X509_STORE_add_cert(store, certificate.x509) != 1 {
            throw .drained(.openssl, "cannot trust the system CA \(certificate.subject)")
        }
        let directory =
            environment(String(cString: X509_get_default_cert_dir_env()))
            ?? String(cString: X509_get_default_cert_dir())
        // By-hash lookups read a directory's file only when a chain needs that subject; a
        // missing directory is only a lookup that finds nothing.
        _ = X509_STORE_load_path(store, directory)
        ERR_clear_error()
    }

    /// The default CA file: `SSL_CERT_FILE`, else OpenSSL's default.
    static var defaultFile: String {
        environment(String(cString: X509_get_default_cert_file_env())) ?? String(cString: X509_get_default_cert_file())
    }

    /// The certificates of `path` (the default CA file), parsed when it changed since the last
    /// call; none when there is no such file.
    static func certificates(inFile path: String = defaultFile) throws(CryptoError) -> [Certificate] {
        let identity = FileIdentity(path: path)
        if let cached = cache.withLock({ $0 }), cached.path == path, cached.identity == identity {
            return cached.certificates
        }
        let certificates = try parse(path: path, exists: identity != nil)
        cache.withLock { $0 = Parsed(path: path, identity: identity, certificates: certificates) }
        return certificates
    }

    private static func parse(path: String, exists: Bool) throws(CryptoError) -> [Certificate] {
        guard exists else { return [] }
        guard let scratch = X509_STORE_new() else { throw .drained(.openssl, "X509_STORE_new failed") }
        defer { X509_STORE_free(scratch) }
        // X509_STORE_load_file reads the file as the default paths do (PEM certificates, the
        // TRUSTED CERTIFICATE form, CRLs); a file it cannot read trusts nothing, as there.
        guard X509_STORE_load_file(scratch, path) == 1 else {
            ERR_clear_error()
            return []
        }
        guard let all = X509_STORE_get1_all_certs(scratch) else { return [] }
        defer { tuisong_openssl_x509_stack_free_all(all) }
        var certificates: [Certificate] = []
        for index in 0..<tuisong_openssl_x509_stack_count(all) {
            if let x509 = tuisong_openssl_x509_stack_value(all, index) {
                certificates.append(Certificate(retaining: x509))
            }
        }
        return certificates
    }

    private static func environment(_ name: String) -> String? {
        guard let value = getenv(name) else { return nil }
        return String(cString: value)
    }

    private struct Parsed: Sendable {
        var path: String
        var identity: FileIdentity?
        var certificates: [Certificate]
    }

    /// What tells a changed file from the one parsed: a replaced file (`update-ca-certificates`
    /// writes a new one and renames it) has another inode, an edited one another size or time.
    private struct FileIdentity: Equatable, Sendable {
        var device: UInt64
        var inode: UInt64
        var size: Int64
        var modifiedSeconds: Int
        var modifiedNanoseconds: Int

        init?(path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
            size = Int64(info.st_size)
            modifiedSeconds = info.st_mtim.tv_sec
            modifiedNanoseconds = info.st_mtim.tv_nsec
        }
    }

    private static let cache = Mutex<Parsed?>(nil)
}
