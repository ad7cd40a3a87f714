import Foundation
import Testing

@testable import TuisongCrypto

/// The system CA file parsed once per process (`SystemTrust`): the same certificates
/// OpenSSL's default verify paths trust, read again only when the file changes.
@Suite struct SystemTrustTests {
    @Test func theDefaultFileGivesEveryOneOfItsCertificatesParsedOnce() throws {
        let path = SystemTrust.defaultFile
        let text = try #require(
            try? String(contentsOfFile: path, encoding: .utf8), "no system CA file at \(path) (ca-certificates)")
        let expected = try Certificate.parseChain(pem: text)
        let first = try SystemTrust.certificates()
        // In the store's order (by subject hash), not the file's.
        #expect(first.count == expected.count)
        #expect(expected.allSatisfy { first.contains($0) })
        let second = try SystemTrust.certificates()
        #expect(second.count == first.count)
        #expect(zip(first, second).allSatisfy { $0 === $1 }, "parsed again although the file did not change")
    }

    @Test func aClientContextTrustsTheSystemCAsBesideItsOwn() throws {
        let own = try TestPKI().ca
        let system = try SystemTrust.certificates()
        let trusting = try TLSContext.client(alpn: ["h2"], trustSystemCAs: true, caCertificates: [own])
        let trusted = trusting.trustedCertificates
        #expect(trusted.count == system.count + 1)
        #expect((system + [own]).allSatisfy { trusted.contains($0) })
        let ownOnly = try TLSContext.client(alpn: ["h2"], trustSystemCAs: false, caCertificates: [own])
        #expect(ownOnly.trustedCertificates == [own])
    }

    @Test func aChangedFileIsReadAgain() throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("cas.pem")
        let (first, second) = (try TestPKI().ca, try TestPKI().ca)
        try first.pem().write(toFile: path, atomically: true, encoding: .utf8)
        let one = try SystemTrust.certificates(inFile: path)
        #expect(one == [first])
        #expect(try SystemTrust.certificates(inFile: path).first === one.first)

        // Appended to (another size), then replaced by a file of the same size (another inode),
        // as update-ca-certificates does: each is read again.
        try (first.pem() + second.pem()).write(toFile: path, atomically: false, encoding: .utf8)
        let both = try SystemTrust.certificates(inFile: path)
        #expect(both.count == 2 && both.contains(first) && both.contains(second))
        try second.pem().write(toFile: path, atomically: true, encoding: .utf8)
        #expect(try SystemTrust.certificates(inFile: path) == [second])

        try FileManager.default.removeItem(atPath: path)
        #expect(try SystemTrust.certificates(inFile: path).isEmpty)
    }
}
