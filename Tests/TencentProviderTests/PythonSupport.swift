import Foundation
import TuisongPluginTestKit

/// Runs Python 3 (the test's independent implementations: zlib, HMAC, Tencent's UserSig
/// algorithm as Tencent's own Python library computes it) and returns its standard output.
struct PythonError: Error, CustomStringConvertible {
    var description: String
}

func runPython(_ script: String, _ arguments: [String] = [], input: [UInt8]? = nil) throws -> [UInt8] {
    let run = try Python3.run(script, arguments, input: input ?? [])
    guard run.status == 0 else { throw PythonError(description: "python3 failed (\(run.status)): \(run.errors)") }
    return run.output
}

/// UserSig v2 as Tencent's TLSSigAPIv2 libraries issue it, computed in Python (hmac, zlib,
/// base64, json), independently of the plugin's verifier.
enum PythonUserSig {
    static let script = #"""
        import sys, json, hmac, hashlib, base64, zlib
        sdkappid, key, ident = int(sys.argv[1]), sys.argv[2], sys.argv[3]
        t, expire = int(sys.argv[4]), int(sys.argv[5])
        userbuf = sys.argv[6] if len(sys.argv) > 6 else None
        content = "TLS.identifier:%s\nTLS.sdkappid:%d\nTLS.time:%d\nTLS.expire:%d\n" % (ident, sdkappid, t, expire)
        doc = {"TLS.ver": "2.0", "TLS.identifier": ident, "TLS.sdkappid": sdkappid, "TLS.expire": expire, "TLS.time": t}
        if userbuf is not None:
            b = base64.b64encode(userbuf.encode()).decode()
            content += "TLS.userbuf:%s\n" % b
            doc["TLS.userbuf"] = b
        doc["TLS.sig"] = base64.b64encode(hmac.new(key.encode(), content.encode(), hashlib.sha256).digest()).decode()
        out = base64.b64encode(zlib.compress(json.dumps(doc).encode())).decode()
        sys.stdout.write(out.replace("+", "*").replace("/", "-").replace("=", "_"))
        """#

    static func make(
        sdkAppID: Int64, key: String, identifier: String, time: Int64 = Int64(Date().timeIntervalSince1970),
        expire: Int64 = 86_400, userBuffer: String? = nil
    ) throws -> String {
        var arguments = [String(sdkAppID), key, identifier, String(time), String(expire)]
        if let userBuffer { arguments.append(userBuffer) }
        return String(decoding: try runPython(script, arguments), as: UTF8.self)
    }
}
