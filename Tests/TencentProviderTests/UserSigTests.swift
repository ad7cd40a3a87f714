import Foundation
import Testing
import TuisongCore

@testable import TencentProvider

@Suite struct InflateTests {
    /// zlib streams made by Python's zlib (stored, fixed and dynamic Huffman blocks) inflate
    /// to exactly their input.
    @Test(arguments: [0, 1, 6, 9])
    func inflatesWhatZlibCompressed(level: Int) throws {
        var text = "TLS.identifier:alice 推送 "
        for n in 0..<300 { text += "element \(n % 17) \(String(repeating: "x", count: n % 7))\n" }
        let input = Array(text.utf8)
        let compressed = try runPython(
            "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read(), int(sys.argv[1])))",
            [String(level)], input: input)
        #expect(try Zlib.decompress(compressed, limit: 1 << 20) == input)
    }

    @Test func refusesDamagedStreams() throws {
        let input = Array(String(repeating: "hello tencent ", count: 50).utf8)
        let compressed = try runPython(
            "import sys, zlib; sys.stdout.buffer.write(zlib.compress(sys.stdin.buffer.read(), 9))", input: input)
        // Truncated, a flipped checksum byte, a wrong header, over the output limit.
        #expect(throws: Zlib.Failure.self) { try Zlib.decompress(Array(compressed.dropLast(5)), limit: 1 << 20) }
        var badChecksum = compressed
        badChecksum[badChecksum.count - 1] ^= 0x01
        #expect(throws: Zlib.Failure(reason: "Adler-32 checksum mismatch")) {
            try Zlib.decompress(badChecksum, limit: 1 << 20)
        }
        var badHeader = compressed
        badHeader[1] ^= 0x01
        #expect(throws: Zlib.Failure.self) { try Zlib.decompress(badHeader, limit: 1 << 20) }
        #expect(throws: Zlib.Failure(reason: "inflates past 100 bytes")) { try Zlib.decompress(compressed, limit: 100) }
        #expect(throws: Zlib.Failure.self) { try Zlib.decompress(Array("not zlib at all".utf8), limit: 1 << 20) }
    }
}

@Suite struct UserSigTests {
    static let key = "5bd2850fff3ecb11d7c805251c51ee463a25727bddc2385f3fa8bfee1bb93b5e"
    static let app: Int64 = 1_400_000_000
    let now = Date()

    func verify(_ sig: String, identifier: String = "alice", app: Int64 = app, key: String = key) throws(TencentError)
        -> UserSigClaims
    {
        try UserSig.verify(sig, identifier: identifier, sdkAppID: app, secretKey: key, now: now)
    }

    func code(_ body: () throws(TencentError) -> UserSigClaims) -> Int? {
        do {
            _ = try body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test func acceptsSigsIssuedByTencentsAlgorithm() throws {
        let time = Int64(now.timeIntervalSince1970) - 100
        let sig = try PythonUserSig.make(sdkAppID: Self.app, key: Self.key, identifier: "alice", time: time)
        #expect(sig.unicodeScalars.allSatisfy { CharacterSet(charactersIn: "*-_").contains($0) || $0.isASCII })
        let claims = try verify(sig)
        #expect(claims == UserSigClaims(identifier: "alice", sdkAppID: Self.app, issuedAt: time, lifetime: 86_400))

        // With a userbuf (TRTC's PrivateMapKey form).
        let withBuffer = try PythonUserSig.make(
            sdkAppID: Self.app, key: Self.key, identifier: "bob", time: time, userBuffer: "room 42")
        #expect(try verify(withBuffer, identifier: "bob").userBuffer == Data("room 42".utf8).base64EncodedString())
    }

    @Test func refusesEachKindOfBadSig() throws {
        let time = Int64(now.timeIntervalSince1970)
        let good = try PythonUserSig.make(sdkAppID: Self.app, key: Self.key, identifier: "alice", time: time)
        #expect(code { () throws(TencentError) in try verify(good, key: "another-key") } == 70009)
        #expect(code { () throws(TencentError) in try verify(good, identifier: "bob") } == 70013)
        #expect(code { () throws(TencentError) in try verify(good, app: 1_400_000_001) } == 70014)
        #expect(code { () throws(TencentError) in try verify("") } == 70002)
        #expect(code { () throws(TencentError) in try verify("garbage!!") } == 70003)
        #expect(code { () throws(TencentError) in try verify("eJyrVkrOzytJzSvRUVAqLU5VslJQKi1OLVIoSSxK") } == 70003)
        #expect(code { () throws(TencentError) in try verify(String(good.prefix(good.count / 2))) } == 70003)

        // Expired: time + expire < now; still valid on its last second.
        let old = try PythonUserSig.make(
            sdkAppID: Self.app, key: Self.key, identifier: "alice", time: time - 1000, expire: 999)
        #expect(code { () throws(TencentError) in try verify(old) } == 70001)
        let lastSecond = try PythonUserSig.make(
            sdkAppID: Self.app, key: Self.key, identifier: "alice", time: time - 1000, expire: 1000)
        #expect(code { () throws(TencentError) in try verify(lastSecond) } == nil)

        // A sig whose HMAC was made over another identifier but relabelled: bad signature.
        let forged = try relabel(good, identifier: "mallory")
        #expect(code { () throws(TencentError) in try verify(forged, identifier: "mallory") } == 70009)
    }

    /// Rewrites a sig's JSON (keeping its TLS.sig), as an attacker could.
    func relabel(_ sig: String, identifier: String) throws -> String {
        let script = #"""
            import sys, json, base64, zlib
            s = sys.argv[1].replace("*", "+").replace("-", "/").replace("_", "=")
            doc = json.loads(zlib.decompress(base64.b64decode(s)))
            doc["TLS.identifier"] = sys.argv[2]
            out = base64.b64encode(zlib.compress(json.dumps(doc).encode())).decode()
            sys.stdout.write(out.replace("+", "*").replace("/", "-").replace("=", "_"))
            """#
        return String(decoding: try runPython(script, [sig, identifier]), as: UTF8.self)
    }

    /// A remembered sig answers as a fresh verification would: under another key, identifier
    /// or SDKAppID it is refused with the same codes, and it expires on time.
    @Test func rememberedSigsAreCheckedAsFreshOnes() throws {
        let sigs = VerifiedUserSigs(capacity: 2)
        let time = Int64(now.timeIntervalSince1970)
        let sig = try PythonUserSig.make(
            sdkAppID: Self.app, key: Self.key, identifier: "alice", time: time - 100, expire: 200)
        func remembered(
            _ sig: String, identifier: String = "alice", app: Int64 = Self.app, key: String = Self.key,
            at: Date? = nil
        ) -> Int? {
            code { () throws(TencentError) in
                try sigs.verify(sig, identifier: identifier, sdkAppID: app, secretKey: key, now: at ?? now)
            }
        }
        #expect(remembered(sig) == nil)
        #expect(sigs.count == 1)
        #expect(remembered(sig) == nil, "from memory")
        #expect(sigs.count == 1)
        #expect(remembered(sig, key: "another-key") == 70009)
        #expect(remembered(sig, identifier: "bob") == 70013)
        #expect(remembered(sig, app: 1_400_000_001) == 70014)
        // Remembered or not, it expires: time + expire < now.
        #expect(remembered(sig, at: now.addingTimeInterval(100)) == nil)
        #expect(remembered(sig, at: now.addingTimeInterval(102)) == 70001)
        // Past its capacity the memory starts again, and still verifies.
        let other = try PythonUserSig.make(sdkAppID: Self.app, key: Self.key, identifier: "bob", time: time)
        let third = try PythonUserSig.make(sdkAppID: Self.app, key: Self.key, identifier: "carol", time: time)
        #expect(remembered(other, identifier: "bob") == nil)
        #expect(sigs.count == 2)
        #expect(remembered(third, identifier: "carol") == nil)
        #expect(sigs.count == 1)
        #expect(remembered(sig) == nil)
    }

    @Test func callParametersAcceptRawAndPercentEncodedSigs() throws {
        let sig = try PythonUserSig.make(sdkAppID: Self.app, key: Self.key, identifier: "administrator")
        let encoded = sig.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!
        for value in [sig, encoded] {
            let request = try TuisongHTTPRequest.make(
                "/v4/openim/sendmsg?sdkappid=1400000000&identifier=administrator&usersig=\(value)&random=7&contenttype=json"
            )
            let parameters = try TencentCallParameters.parse(request.query)
            #expect(parameters.userSig == sig && parameters.identifier == "administrator")
        }
        func code(_ target: String) throws -> Int? {
            let query = try TuisongHTTPRequest.make(target).query
            do {
                _ = try TencentCallParameters.parse(query)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(try code("/v4/a/b?identifier=x&usersig=y") == 60012)
        #expect(try code("/v4/a/b?sdkappid=abc&identifier=x&usersig=y") == 60006)
        #expect(try code("/v4/a/b?sdkappid=1&usersig=y") == 60004)
        #expect(try code("/v4/a/b?sdkappid=1&identifier=x") == 70002)
        #expect(try code("/v4/a/b?sdkappid=1&identifier=x&usersig=y&random=1&random=1") == nil)
    }
}
