/// One `-----BEGIN X-----` … `-----END X-----` block of a PEM text, kept verbatim (headers
/// such as `Proc-Type`/`DEK-Info` included) so OpenSSL can parse exactly that block.
struct PEMBlock {
    let label: String
    let text: String

    var isCertificate: Bool { label == "CERTIFICATE" || label == "X509 CERTIFICATE" || label == "TRUSTED CERTIFICATE" }
    var isPrivateKey: Bool { label.hasSuffix("PRIVATE KEY") }
    /// PKCS#8 `ENCRYPTED PRIVATE KEY`, or a legacy SEC1/PKCS#1 key with `Proc-Type: 4,ENCRYPTED`.
    var isEncrypted: Bool { label == "ENCRYPTED PRIVATE KEY" || text.contains("Proc-Type: 4,ENCRYPTED") }

    /// Every block in `text`, in order. Text outside blocks (bag attributes written by
    /// `openssl pkcs12`, comments) is ignored; an unterminated block is dropped.
    static func scan(_ text: String) -> [PEMBlock] {
        var blocks: [PEMBlock] = []
        var current: (label: String, lines: [Substring])?
        for rawLine in text.split(omittingEmptySubsequences: false, whereSeparator: { $0 == "\n" || $0 == "\r\n" }) {
            let line = rawLine.trimmingSuffix(while: { $0 == "\r" || $0 == " " || $0 == "\t" })
            if let open = current {
                current!.lines.append(line)
                if line.hasPrefix("-----END ") {
                    if line == "-----END \(open.label)-----" {
                        blocks.append(PEMBlock(label: open.label, text: current!.lines.joined(separator: "\n") + "\n"))
                    }
                    current = nil
                }
            } else if line.hasPrefix("-----BEGIN "), line.hasSuffix("-----"), line.count > 16 {
                let label = String(line.dropFirst(11).dropLast(5))
                current = (label, [line])
            }
        }
        return blocks
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
