import Foundation
import Testing
import TuisongPluginTestKit

@testable import TuisongCrypto

/// A temporary directory removed when the value goes away.
final class TemporaryDirectory {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("tuisong-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    func write(_ name: String, _ text: String) throws {
        try Data(text.utf8).write(to: url.appendingPathComponent(name))
    }
    func write(_ name: String, bytes: [UInt8]) throws { try Data(bytes).write(to: url.appendingPathComponent(name)) }
    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: url.appendingPathComponent(name))) }
    func readText(_ name: String) throws -> String { String(decoding: try read(name), as: UTF8.self) }
}

struct CommandResult {
    let status: Int32
    let stdout: String
    let stderr: String
}

/// Runs the `openssl` command-line tool in `directory`: the independent implementation the
/// tests cross-check against.
@discardableResult
func openssl(
    _ arguments: [String], in directory: TemporaryDirectory, expectSuccess: Bool = true,
    sourceLocation: SourceLocation = #_sourceLocation
) throws -> CommandResult {
    let process = ChildProcess()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
    process.arguments = arguments
    process.currentDirectoryURL = directory.url
    let out = Pipe()
    let err = Pipe()
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    let stdout = out.fileHandleForReading.readDataToEndOfFile()
    let stderr = err.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    let result = CommandResult(
        status: process.terminationStatus, stdout: String(decoding: stdout, as: UTF8.self),
        stderr: String(decoding: stderr, as: UTF8.self))
    if expectSuccess {
        #expect(
            result.status == 0, "openssl \(arguments.joined(separator: " ")): \(result.stderr)",
            sourceLocation: sourceLocation)
    }
    return result
}

/// Expects `body` to throw a `CryptoError` with `code`.
func expectCryptoError(
    _ code: CryptoError.Code, sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) {
    do {
        try body()
        Issue.record("expected CryptoError.\(code), but it succeeded", sourceLocation: sourceLocation)
    } catch let error as CryptoError {
        #expect(error.code == code, "got \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("expected CryptoError.\(code), got \(error)", sourceLocation: sourceLocation)
    }
}

/// ECDSA-Sig-Value DER ⇄ raw r‖s written independently of the module (which uses OpenSSL),
/// so the CLI cross-check does not trust the code under test to convert.
enum TestDER {
    static func derFromRaw(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop(while: { $0 == 0 }))
            if value.isEmpty { value = [0] }
            if value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    static func rawFromDER(_ der: [UInt8]) -> [UInt8]? {
        guard der.count > 2, der[0] == 0x30, Int(der[1]) == der.count - 2 else { return nil }
        var index = 2
        var out: [UInt8] = []
        for _ in 0..<2 {
            guard index + 2 <= der.count, der[index] == 0x02 else { return nil }
            let length = Int(der[index + 1])
            guard index + 2 + length <= der.count else { return nil }
            let value = Array(der[(index + 2)..<(index + 2 + length)].drop(while: { $0 == 0 }))
            guard value.count <= 32 else { return nil }
            out += [UInt8](repeating: 0, count: 32 - value.count) + value
            index += 2 + length
        }
        return index == der.count ? out : nil
    }
}

/// A throwaway CA and a leaf it issued, for certificate, PKCS#12 and TLS tests.
struct TestPKI {
    let caKey: PrivateKey
    let ca: Certificate
    let leafKey: PrivateKey
    let leaf: Certificate

    init(
        leafCommonName: String = "localhost", leafUID: String? = nil, altNames: [String] = ["localhost", "127.0.0.1"],
        extraExtensions: [(oid: String, value: [UInt8])] = [], rsaLeaf: Bool = false
    ) throws {
        let now = Date()
        caKey = try PrivateKey.generateP256()
        ca = try Certificate.issue(
            subjectCommonName: "Tuisong Test CA", subjectAltNames: [], publicKey: caKey.publicKey, issuer: nil,
            signingKey: caKey, isCA: true, notBefore: now.addingTimeInterval(-3600),
            notAfter: now.addingTimeInterval(86400))
        leafKey = rsaLeaf ? try PrivateKey.generateRSA(bits: 2048) : try PrivateKey.generateP256()
        leaf = try Certificate.issue(
            subjectCommonName: leafCommonName, subjectUID: leafUID, subjectAltNames: altNames,
            publicKey: leafKey.publicKey,
            issuer: (ca, caKey), signingKey: caKey, isCA: false, notBefore: now.addingTimeInterval(-3600),
            notAfter: now.addingTimeInterval(86400), extraExtensions: extraExtensions)
    }
}
