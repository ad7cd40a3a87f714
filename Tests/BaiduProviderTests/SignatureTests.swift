import Foundation
import Testing
import TuisongHTTP

@testable import BaiduProvider

/// The signature checked against values computed outside the plugin: Baidu's published
/// example, a Python signer (Baidu's Python SDK uses `quote_plus`), and — when installed —
/// real Node.js and Java doing what Baidu's Node and Java SDKs do.
@Suite struct SignatureTests {
    static let url = "http://api.tuisong.baidu.com/rest/3.0/test/echo"
    static let secret = "87772555E1C16715EBA5C85341684C58"
    static let vectorParameters = [
        "apikey": "Ljc710pzAa99GULCo8y48NvB", "expires": "1313293565", "timestamp": "1427180905",
    ]
    /// Every character the SDKs encode differently, plus UTF-8 and form syntax.
    static let trickyParameters = [
        "apikey": "Ljc710pzAa99GULCo8y48NvB", "timestamp": "1700000000",
        "msg": #"{"aps":{"alert":"订单 ~已发货* (1/2)! it's \"ok\" + a&b=c"}}"#, "tag": "a.b-c_d",
    ]

    static func pairs(_ parameters: [String: String]) -> [(name: String, value: String)] {
        parameters.map { ($0.key, $0.value) }
    }

    @Test func baiduPublishedExample() {
        // The example of Baidu's SDK developer guide (also node-baidu-push's test).
        let sign = BaiduSignature.sign(
            method: "POST", url: Self.url, parameters: Self.pairs(Self.vectorParameters), secretKey: Self.secret)
        #expect(sign == "7d14113142e2a1583b4e9dad3fba73d0")
    }

    @Test func pythonSignerReproducesThePublishedExample() throws {
        for style in [SignatureStyle.python, .java, .node] {
            let sign = try signWithPython(
                method: "POST", url: Self.url, parameters: Self.vectorParameters, secret: Self.secret, style: style)
            #expect(sign == "7d14113142e2a1583b4e9dad3fba73d0", "\(style)")
        }
    }

    @Test(arguments: SignatureStyle.allCases)
    func acceptsEverySDKEncoding(style: SignatureStyle) throws {
        let sign = try signWithPython(
            method: "POST", url: Self.url, parameters: Self.trickyParameters, secret: Self.secret, style: style)
        #expect(
            BaiduSignature.verify(
                sign: sign, method: "POST", urls: [Self.url], parameters: Self.pairs(Self.trickyParameters),
                secretKey: Self.secret))
        // Upper-case hex is the same signature.
        #expect(
            BaiduSignature.verify(
                sign: sign.uppercased(), method: "POST", urls: [Self.url],
                parameters: Self.pairs(Self.trickyParameters),
                secretKey: Self.secret))
    }

    @Test func theEncodingsReallyDiffer() throws {
        // Otherwise the test above would prove nothing about the variants.
        var signs = Set<String>()
        for style in SignatureStyle.allCases {
            signs.insert(
                try signWithPython(
                    method: "POST", url: Self.url, parameters: Self.trickyParameters, secret: Self.secret, style: style)
            )
        }
        #expect(signs.count == 3)  // java and node agree; python keeps ~; rfc3986 writes %20
    }

    @Test func rejectsWhatDiffersInAnyPart() throws {
        let parameters = Self.pairs(Self.trickyParameters)
        let sign = try signWithPython(
            method: "POST", url: Self.url, parameters: Self.trickyParameters, secret: Self.secret, style: .python)
        func verify(
            method: String = "POST", url: String = Self.url, parameters: [(name: String, value: String)]? = nil,
            secret: String = Self.secret, sign: String = sign
        ) -> Bool {
            BaiduSignature.verify(
                sign: sign, method: method, urls: [url], parameters: parameters ?? Self.pairs(Self.trickyParameters),
                secretKey: secret)
        }
        #expect(verify())
        #expect(!verify(method: "GET"))
        #expect(!verify(url: "http://api.tuisong.baidu.com/rest/3.0/push/all"))
        #expect(!verify(secret: "0" + Self.secret.dropFirst()))
        #expect(!verify(parameters: parameters.map { ($0.name, $0.name == "tag" ? "a.b-c_e" : $0.value) }))
        #expect(!verify(parameters: parameters + [("device_type", "4")]))
        #expect(!verify(sign: "not hex"))
        #expect(!verify(sign: String(sign.dropLast())))
        // `sign` itself is never part of what is signed.
        #expect(verify(parameters: parameters + [("sign", sign)]))
    }

    static let nodeAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/node")
    static let javaAvailable = FileManager.default.isExecutableFile(atPath: "/usr/bin/java")

    @Test(.enabled(if: nodeAvailable, "node is not installed"))
    func realNode() throws {
        // What Baidu's Node SDK does: encodeURIComponent, then !'()*~ encoded, %20 → +.
        let script = #"""
            const crypto = require('crypto');
            let input = '';
            process.stdin.on('data', (d) => { input += d; });
            process.stdin.on('end', () => {
              const r = JSON.parse(input);
              let text = r.method + r.url;
              for (const key of Object.keys(r.params).sort()) text += key + '=' + r.params[key];
              text += r.secret;
              const encoded = encodeURIComponent(text)
                .replace(/[!'()*~]/g, (c) => '%' + c.charCodeAt(0).toString(16).toUpperCase())
                .replace(/%20/g, '+');
              console.log(crypto.createHash('md5').update(encoded).digest('hex'));
            });
            """#
        let input = try JSONSerialization.data(withJSONObject: [
            "method": "POST", "url": Self.url, "params": Self.trickyParameters, "secret": Self.secret,
        ])
        let sign = try run("/usr/bin/node", ["-e", script], input: input)
        #expect(sign.count == 32)
        #expect(
            BaiduSignature.verify(
                sign: sign, method: "POST", urls: [Self.url], parameters: Self.pairs(Self.trickyParameters),
                secretKey: Self.secret))
        let vector = try run(
            "/usr/bin/node", ["-e", script],
            input: try JSONSerialization.data(withJSONObject: [
                "method": "POST", "url": Self.url, "params": Self.vectorParameters, "secret": Self.secret,
            ]))
        #expect(vector == "7d14113142e2a1583b4e9dad3fba73d0")
    }

    @Test(.enabled(if: javaAvailable, "java is not installed"))
    func realJava() throws {
        // Baidu's Java SDK: a sorted TreeMap, URLEncoder.encode, then * → %2A ("sdk"); also
        // a client that skips the replacement ("raw").
        let source = """
            import java.io.*;
            import java.net.URLEncoder;
            import java.nio.charset.StandardCharsets;
            import java.security.MessageDigest;
            import java.util.*;

            public class Sign {
                public static void main(String[] args) throws Exception {
                    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                    String method = in.readLine(), url = in.readLine(), secret = in.readLine();
                    TreeMap<String, String> params = new TreeMap<>();
                    String line;
                    while ((line = in.readLine()) != null) {
                        int tab = line.indexOf('\\t');
                        params.put(line.substring(0, tab), line.substring(tab + 1));
                    }
                    StringBuilder text = new StringBuilder(method).append(url);
                    for (Map.Entry<String, String> e : params.entrySet()) text.append(e.getKey()).append('=').append(e.getValue());
                    text.append(secret);
                    for (String mode : new String[] {"sdk", "raw"}) {
                        String encoded = URLEncoder.encode(text.toString(), "UTF-8");
                        if (mode.equals("sdk")) encoded = encoded.replace("*", "%2A");
                        byte[] digest = MessageDigest.getInstance("MD5").digest(encoded.getBytes(StandardCharsets.UTF_8));
                        StringBuilder hex = new StringBuilder();
                        for (byte b : digest) hex.append(String.format("%02x", b));
                        System.out.println(hex);
                    }
                }
            }
            """
        let directory = FileManager.default.temporaryDirectory.appending(path: "baidu-java-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        try source.write(to: directory.appending(path: "Sign.java"), atomically: true, encoding: .utf8)
        var input = "POST\n\(Self.url)\n\(Self.secret)\n"
        for (name, value) in Self.trickyParameters { input += "\(name)\t\(value)\n" }
        let output = try run("/usr/bin/java", ["Sign.java"], input: Data(input.utf8), directory: directory)
        let signs = output.split(separator: "\n").map(String.init)
        #expect(signs.count == 2)
        #expect(signs[0] != signs[1])  // the text has a `*`: the two encodings differ
        for sign in signs {
            #expect(
                BaiduSignature.verify(
                    sign: sign, method: "POST", urls: [Self.url], parameters: Self.pairs(Self.trickyParameters),
                    secretKey: Self.secret))
        }
    }

    @Test func candidateURLsFollowTheClientsView() throws {
        let plain = try Request(
            method: .POST, target: "/rest/3.0/push/all?x=1", headers: ["Host": "push.example.com:8080"])
        #expect(
            BaiduAuthenticator.candidateURLs(plain) == [
                "http://push.example.com:8080/rest/3.0/push/all", "https://push.example.com:8080/rest/3.0/push/all",
            ])
        let proxied = try Request(
            method: .POST, target: "/rest/2.0/channel/channel",
            headers: ["Host": "10.0.0.5:8080", "X-Forwarded-Host": "api.tuisong.baidu.com"], isTLS: true)
        #expect(
            BaiduAuthenticator.candidateURLs(proxied) == [
                "https://api.tuisong.baidu.com/rest/2.0/channel/channel",
                "https://10.0.0.5:8080/rest/2.0/channel/channel",
                "http://api.tuisong.baidu.com/rest/2.0/channel/channel",
                "http://10.0.0.5:8080/rest/2.0/channel/channel",
            ])
    }
}
