import Foundation
import TuisongCore
import TuisongCrypto
import TuisongTransportKit

extension APNsPushTransport {
    /// How an uploaded `.p8` key, `.p12` bundle or PEM certificate is checked: it parses, the
    /// password opens it, the key belongs to the certificate, it has not expired, it is the kind
    /// it claims to be. Refusals keep the admin API's codes (`wrong_password`, `corrupt_file`,
    /// `wrong_kind`, `expired`, `key_mismatch`, `invalid_key_id`, `invalid_team_id`,
    /// `environment_required`).
    ///
    /// `environment` nil means both where the credential can serve both: a `.p8` key always can
    /// (Apple's token keys sign for sandbox and production alike); a certificate serves both
    /// when it is universal (it names both environments, whatever was chosen), else the one it
    /// names. A `.p8` given one environment serves that one only.
    static let uploadedCredentialForm = UploadedCredentialForm(
        files: [
            CredentialForm.Field(
                "p8", .file, required: false,
                label: LocalizedText(en: ".p8 signing key (token)", zh: ".p8 签名密钥（Token）"),
                help: "A .p8 token key file (with --key-id and --team-id).", accept: ".p8,.pem,.txt"),
            CredentialForm.Field(
                "p12", .file, required: false, label: LocalizedText(en: ".p12 certificate", zh: ".p12 证书"),
                help: "A .p12 certificate file (with --password-env).", accept: ".p12,.pfx"),
            CredentialForm.Field(
                "pem", .file, required: false, label: LocalizedText(en: "PEM certificate + key", zh: "PEM 证书和私钥"),
                help: "A PEM file with certificate and private key.", accept: ".pem,.crt,.cer,.key,.txt"),
        ],
        fields: [
            CredentialForm.Field(
                "key_id", required: false, label: LocalizedText(en: "Key ID", zh: "Key ID"),
                help: "The 10-character key id of the .p8.", placeholder: "ABC123DEFG", rule: .identifier(10...10)),
            CredentialForm.Field(
                "team_id", required: false, label: LocalizedText(en: "Team ID", zh: "Team ID"),
                help: "The 10-character team id.", placeholder: "DEF123GHIJ", rule: .identifier(10...10)),
            CredentialForm.Field(
                "password", .secret, required: false, label: LocalizedText(en: "Password", zh: "密码"),
                help: "The environment variable holding the .p12 or PEM key password.", rule: .printable(1...1024)),
        ],
        needs: ["p8": ["key_id", "team_id"]], optional: ["p12": ["password"], "pem": ["password"]],
        environmentHelp: "both (a .p8's default), sandbox or production.",
        environments: """
            a .p8 key serves both unless told one
                (Apple's keys sign for either); a certificate serves both when it is universal, else
                the one it names (--environment for one that names none).
            """,
        consoleHints: [
            "p8": LocalizedText(
                en: "AuthKey_XXXXXXXXXX.p8 from the Apple Developer site.",
                zh: "从 Apple 开发者网站下载的 AuthKey_XXXXXXXXXX.p8。"),
            "p12": LocalizedText(
                en: "The push certificate exported from Keychain Access with its private key.",
                zh: "从钥匙串访问导出的推送证书（含私钥）。"),
            "pem": LocalizedText(
                en: "One PEM file with the certificate and its private key.", zh: "包含证书和私钥的 PEM 文件。"),
            "environment": LocalizedText(
                en:
                    "A .p8 key serves both environments. A certificate serves the one it was issued for, or both when it is universal.",
                zh: ".p8 密钥同时用于两个环境。证书用于签发时的环境，通用证书同时用于两者。"),
        ]
    ) { upload, environment, now throws(UploadRefusal) in
        switch upload {
        case .p8(let pem, let givenKeyID, let givenTeamID):
            // Apple shows its ids in capitals; one typed in lower case is the same id.
            let keyID = givenKeyID.uppercased()
            let teamID = givenTeamID.uppercased()
            guard isAppleIdentifier(keyID) else {
                throw UploadRefusal(
                    "invalid_key_id", "the key id must be the 10 letters and digits Apple shows, got \"\(givenKeyID)\"",
                    field: "key_id")
            }
            guard isAppleIdentifier(teamID) else {
                throw UploadRefusal(
                    "invalid_team_id",
                    "the team id must be the 10 letters and digits Apple shows, got \"\(givenTeamID)\"",
                    field: "team_id")
            }
            let key: PrivateKey
            do throws(CryptoError) {
                key = try PrivateKey(pem: pem)
            } catch {
                if pem.contains("CERTIFICATE") {
                    throw UploadRefusal("wrong_kind", "this is a certificate, not a .p8 key: upload it as PEM or .p12")
                }
                throw UploadRefusal("corrupt_file", "the .p8 file does not hold a private key (\(error.message))")
            }
            guard key.kind == .ecP256 else {
                throw UploadRefusal("wrong_kind", "a .p8 APNs key is an EC P-256 key; this one is not")
            }
            return InspectedUpload(
                kind: .p8, environment: environment ?? .production, servesBothEnvironments: environment == nil,
                teamID: teamID, keyID: keyID)
        case .p12(let der, let password):
            let parsed: (certificate: Certificate, key: PrivateKey, chain: [Certificate])
            do throws(CryptoError) {
                parsed = try PKCS12.parse(der, password: password)
            } catch  where error.code == .wrongPassword {
                throw UploadRefusal("wrong_password", "the password does not open this .p12 file", field: "password")
            } catch  where error.code == .keyMismatch {
                throw UploadRefusal(
                    "key_mismatch", "the private key in this .p12 file does not belong to its certificate")
            } catch {
                throw UploadRefusal("corrupt_file", "this is not a readable .p12 file (\(error.message))")
            }
            return try certificateUpload(
                parsed.certificate, key: parsed.key, kind: .p12, environment: environment, now: now)
        case .pem(let text, let password):
            let parsed: (certificate: Certificate, key: PrivateKey?, chain: [Certificate])
            do throws(CryptoError) {
                parsed = try PEMBundle.parse(text, password: password)
            } catch  where error.code == .wrongPassword {
                throw UploadRefusal(
                    "wrong_password", "the password does not decrypt the PEM private key", field: "password")
            } catch  where error.code == .keyMismatch {
                throw UploadRefusal("key_mismatch", "the private key does not belong to the certificate")
            } catch {
                if text.contains("PRIVATE KEY"), !text.contains("CERTIFICATE") {
                    throw UploadRefusal(
                        "wrong_kind", "this PEM holds only a key; a .p8 key is uploaded with its key id and team id")
                }
                throw UploadRefusal("corrupt_file", "the PEM text does not hold a certificate (\(error.message))")
            }
            guard let key = parsed.key else {
                throw UploadRefusal("wrong_kind", "the PEM holds a certificate but no private key; paste both")
            }
            return try certificateUpload(parsed.certificate, key: key, kind: .pem, environment: environment, now: now)
        }
    }

    private static func certificateUpload(
        _ certificate: Certificate, key: PrivateKey, kind: CredentialKind, environment: PushEnvironment?, now: Date
    ) throws(UploadRefusal) -> InspectedUpload {
        guard certificate.matches(key) else {
            throw UploadRefusal("key_mismatch", "the private key does not belong to the certificate")
        }
        guard certificate.notAfter > now else {
            throw UploadRefusal("expired", "the certificate expired on \(rfc3339(certificate.notAfter))")
        }
        let named = certificate.applePushEnvironments.compactMap(PushEnvironment.init(rawValue:))
        let universal = named.count == 2
        guard let chosen = environment ?? (named.count == 1 ? named[0] : universal ? .production : nil) else {
            throw UploadRefusal(
                "environment_required",
                "this certificate does not say which APNs environment it is for: choose sandbox or production",
                field: "environment")
        }
        return InspectedUpload(
            kind: kind, environment: chosen, servesBothEnvironments: universal, subject: certificate.subject,
            topics: certificate.applePushTopics, expiresAt: certificate.notAfter)
    }

    /// Apple's key and team ids: 10 ASCII letters and digits.
    static func isAppleIdentifier(_ s: String) -> Bool {
        s.utf8.count == 10
            && s.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) }
    }

    /// `2026-11-21T08:00:00.000Z`, as the gateway writes times.
    private static func rfc3339(_ date: Date) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date)
    }
}
