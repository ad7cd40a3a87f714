import Foundation
import Logging
import TuisongCore
import TuisongCrypto

/// The master key that encrypts every secret at rest (p8 keys, p12 files and passwords,
/// vendor secret keys) with AES-256-GCM. From `security.master_key` (base64, usually through
/// `TUISONG_SECURITY_MASTER_KEY`) or a 0600 key file created on first start.
public struct MasterKey: Sendable {
    public let box: SecretBox
    /// Where it came from, for the start banner; never the key itself.
    public let source: String
    public let created: Bool

    public static func load(_ security: GatewayConfig.Security, logger: Logger) throws -> MasterKey {
        if !security.masterKey.isEmpty {
            guard let bytes = Data(base64Encoded: security.masterKey), bytes.count == 32 else {
                throw ConfigError("security.master_key", "must be 32 bytes in base64 (value hidden)")
            }
            return MasterKey(box: try SecretBox(key: Array(bytes)), source: "security.master_key", created: false)
        }
        let path = security.masterKeyFile
        if FileManager.default.fileExists(atPath: path) {
            return MasterKey(
                box: try SecretBox(key: try readKeyFile(path, logger: logger)), source: path, created: false)
        }
        let key = SecureRandom.bytes(32)
        if try writeNewKeyFile(path, key: key) {
            return MasterKey(box: try SecretBox(key: key), source: path, created: true)
        }
        // Another process created it between our check and our create: use theirs.
        return MasterKey(box: try SecretBox(key: try readKeyFile(path, logger: logger)), source: path, created: false)
    }

    static func readKeyFile(_ path: String, logger: Logger) throws -> [UInt8] {
        var info = stat()
        if stat(path, &info) == 0, info.st_mode & 0o077 != 0 {
            logger.warning(
                "the master key file is readable by group or others; chmod 600 it", metadata: ["path": "\(path)"])
        }
        let text = try String(contentsOfFile: path, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
            throw ConfigError("security.master_key_file", "\(path) does not hold a base64 32-byte key")
        }
        return Array(bytes)
    }

    /// Creates the file with mode 0600 from the start (O_EXCL: never over an existing key).
    static func writeNewKeyFile(_ path: String, key: [UInt8]) throws -> Bool {
        try createParentDirectory(of: path)
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd < 0 {
            if errno == EEXIST { return false }
            throw ConfigError("security.master_key_file", "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let line = Array((Data(key).base64EncodedString() + "\n").utf8)
        let written = line.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == line.count, fsync(fd) == 0 else {
            throw ConfigError("security.master_key_file", "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        return true
    }
}

func createParentDirectory(of path: String) throws {
    let directory = (path as NSString).deletingLastPathComponent
    if !directory.isEmpty {
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }
}

/// The console's admin password: created on first start (or taken from
/// `TUISONG_ADMIN_PASSWORD`), stored only as a PBKDF2 hash.
public enum AdminPassword {
    static let settingKey = "admin.password_hash"

    public enum Bootstrap: Sendable, Equatable {
        /// Already set on an earlier start.
        case existing
        /// Set from the environment variable.
        case fromEnvironment
        /// Generated; written (0600) to this file for the operator to read once.
        case generated(file: String)
    }

    /// - Parameter iterations: PBKDF2's count for a hash made here; the default except in tests
    ///   (`GatewayRuntime.start`), which start hundreds of gateways.
    public static func bootstrap(
        settings: any SettingsStore, environment: [String: String], passwordFile: String,
        iterations: Int = PasswordHash.defaultIterations
    ) async throws -> Bootstrap {
        if let given = environment["TUISONG_ADMIN_PASSWORD"], !given.isEmpty {
            // Checked before hashing: a restart with the same variable costs one PBKDF2, not
            // two (a hash made and thrown away, then the check).
            if let current = try await settings.setting(settingKey), PasswordHash.verify(given, against: current) {
                return .existing
            }
            let hash = try PasswordHash.make(given, iterations: iterations)
            if try await settings.insertSettingIfAbsent(settingKey, value: hash) { return .fromEnvironment }
            // Set meanwhile or before: the environment variable changes it (operators rotate
            // it this way).
            try await settings.setSetting(settingKey, value: hash)
            return .fromEnvironment
        }
        if try await settings.setting(settingKey) != nil { return .existing }
        let password = Base64URL.encode(SecureRandom.bytes(15))
        guard
            try await settings.insertSettingIfAbsent(
                settingKey, value: try PasswordHash.make(password, iterations: iterations))
        else {
            return .existing
        }
        try createParentDirectory(of: passwordFile)
        try? FileManager.default.removeItem(atPath: passwordFile)
        guard
            FileManager.default.createFile(
                atPath: passwordFile, contents: Data((password + "\n").utf8), attributes: [.posixPermissions: 0o600])
        else {
            throw ConfigError("security.initial_admin_password_file", "cannot write \(passwordFile)")
        }
        return .generated(file: passwordFile)
    }

    /// Whether `candidate` matches a stored hash (PBKDF2: slow on purpose; keep it off the
    /// cooperative pool, see `PasswordVerifier`).
    static func matches(_ candidate: String, storedHash: String) -> Bool {
        PasswordHash.verify(candidate, against: storedHash)
    }

    public static func verify(_ candidate: String, settings: any SettingsStore) async throws -> Bool {
        guard let stored = try await settings.setting(settingKey) else { return false }
        return PasswordHash.verify(candidate, against: stored)
    }
}
