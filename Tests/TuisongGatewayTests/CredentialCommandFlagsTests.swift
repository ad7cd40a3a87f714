import Foundation
import Testing
import TuisongCore
import TuisongGateway

@testable import TuisongCLI

/// `credential add`'s flags are made from each transport's declared credential form (no CLI code
/// per service): the spellings operators, docs and scripts use keep parsing to the same fields,
/// and a transport known only from its declaration (`EchoTransport`, registered in the tests'
/// binary) gets its flags, its help and its checks with no line of CLI code.
@Suite struct CredentialCommandFlagsTests {
    /// One standard transport's flags as README, docs/android.md and the vendors' docs spell
    /// them, the form field each fills, and its line of `credential add --help`, as before the
    /// flags were derived.
    struct Spelling: Sendable, CustomTestStringConvertible {
        var channel: String
        var arguments: [String]
        var fields: [String: String]
        var helpLine: String
        var testDescription: String { channel }
    }

    static let spellings: [Spelling] = [
        Spelling(
            channel: "fcm", arguments: ["--service-account", "key.json"], fields: ["file": "key.json"],
            helpLine: "--channel fcm: --service-account FILE (Service account JSON)"),
        Spelling(
            channel: "huawei",
            arguments: [
                "--vendor-app-id", "10086", "--client-id", "10086", "--client-secret-env", "HUAWEI_SECRET",
                "--badge-class", "com.example.MainActivity", "--receipt-id", "RCP78C959D4",
            ],
            fields: [
                "vendor_app_id": "10086", "client_id": "10086", "client_secret": "HUAWEI_SECRET",
                "badge_class": "com.example.MainActivity", "receipt_id": "RCP78C959D4",
            ],
            helpLine:
                "--channel huawei: --vendor-app-id VENDOR_APP_ID (App ID) --client-id CLIENT_ID (Client ID) --client-secret-env VAR (Client secret) [--badge-class BADGE_CLASS] (Badge class) [--receipt-id RECEIPT_ID] (Receipt id)"
        ),
        Spelling(
            channel: "honor",
            arguments: [
                "--vendor-app-id", "104400000", "--client-id", "honor-client", "--client-secret-env", "HONOR_SECRET",
                "--badge-class", "com.example.MainActivity", "--receipts", "on",
            ],
            fields: [
                "vendor_app_id": "104400000", "client_id": "honor-client", "client_secret": "HONOR_SECRET",
                "badge_class": "com.example.MainActivity", "receipts": "on",
            ],
            helpLine:
                "--channel honor: --vendor-app-id VENDOR_APP_ID (App ID) --client-id CLIENT_ID (Client ID) --client-secret-env VAR (Client secret) [--badge-class BADGE_CLASS] (Badge class) [--receipts RECEIPTS] (Delivery receipts)"
        ),
        Spelling(
            channel: "xiaomi",
            arguments: [
                "--vendor-app-id", "com.example.chat", "--client-id", "2882303761517", "--client-secret-env",
                "XIAOMI_SECRET",
            ],
            fields: [
                "vendor_app_id": "com.example.chat", "client_id": "2882303761517", "client_secret": "XIAOMI_SECRET",
            ],
            helpLine:
                "--channel xiaomi: --vendor-app-id VENDOR_APP_ID (Package name) --client-id CLIENT_ID (AppID) --client-secret-env VAR (AppSecret)"
        ),
        Spelling(
            channel: "oppo",
            arguments: [
                "--vendor-app-id", "30012345", "--client-id", "oppo-key", "--client-secret-env", "OPPO_SECRET",
            ],
            fields: ["vendor_app_id": "30012345", "client_id": "oppo-key", "client_secret": "OPPO_SECRET"],
            helpLine:
                "--channel oppo: --vendor-app-id VENDOR_APP_ID (App ID) --client-id CLIENT_ID (AppKey) --client-secret-env VAR (MasterSecret)"
        ),
        Spelling(
            channel: "vivo",
            arguments: [
                "--vendor-app-id", "10086", "--client-id", "vivo-key", "--client-secret-env", "VIVO_SECRET",
                "--receipt-id", "1234",
            ],
            fields: [
                "vendor_app_id": "10086", "client_id": "vivo-key", "client_secret": "VIVO_SECRET", "receipt_id": "1234",
            ],
            helpLine:
                "--channel vivo: --vendor-app-id VENDOR_APP_ID (App ID) --client-id CLIENT_ID (AppKey) --client-secret-env VAR (AppSecret) [--receipt-id RECEIPT_ID] (Receipt id)"
        ),
        Spelling(
            channel: "harmony",
            arguments: ["--service-account", "private.json", "--category", "IM", "--receipt-id", "RCP1234"],
            fields: ["file": "private.json", "category": "IM", "receipt_id": "RCP1234"],
            helpLine:
                "--channel harmony: --service-account FILE (Service account key JSON) [--category CATEGORY] (Default category) [--receipt-id RECEIPT_ID] (Receipt id)"
        ),
    ]

    func parseAdd(_ arguments: [String]) throws -> CredentialCommand.Add {
        TransportRegistry.install()
        let command = try Tuisong.parseAsRoot(["credential", "add", "--app", "3"] + arguments)
        return try #require(command as? CredentialCommand.Add)
    }

    @Test(arguments: spellings) func aTransportsDocumentedFlagsStillParseToItsFields(_ spelling: Spelling) throws {
        let add = try parseAdd(["--channel", spelling.channel] + spelling.arguments)
        #expect(add.channel == spelling.channel)
        let given = try add.split.fields
        #expect(Dictionary(uniqueKeysWithValues: given.map { ($0.field.name, $0.value) }) == spelling.fields)
        #expect(try add.selector == nil)
        #expect(ChannelFormFlags.discussion.contains("  " + spelling.helpLine + "\n"), "\(ChannelFormFlags.discussion)")
        // A required field left out is named with its flag, as before.
        let form = try #require(TransportRegistry.standard.declaration(of: PushChannel(rawValue: spelling.channel)!))
        if let required = form.credentialForm?.fields.first(where: \.required),
            let index = spelling.arguments.firstIndex(of: required.cliFlag)
        {
            var without = spelling.arguments
            without.removeSubrange(index...index + 1)
            #expect(throws: (any Error).self) { try parseAdd(["--channel", spelling.channel] + without) }
        }
    }

    @Test func everyStandardTransportWithAFormHasItsSpellingHere() {
        #expect(
            Set(Self.spellings.map(\.channel)) == Set(TransportRegistry.standard.withCredentialForms.map(\.name)),
            "a transport added to the registry: write its documented flags above")
    }

    @Test func theProvidersSelectorFlagsAndAPNsFlagsParseAsBefore() throws {
        let tencent = try parseAdd(["--channel", "fcm", "--service-account", "key.json", "--busi-id", "2002"])
        #expect(try tencent.selector == "2002")
        let easemob = try parseAdd([
            "--channel", "huawei", "--vendor-app-id", "10086", "--client-id", "10086", "--client-secret-env", "S",
            "--notifier-name", "hw-notifier",
        ])
        #expect(try easemob.selector == "hw-notifier")
        let apns = try parseAdd([
            "--p8", "AuthKey.p8", "--key-id", "ABC123DEFG", "--team-id", "DEF123GHIJ", "--environment", "sandbox",
            "--selector", "ios-prod",
        ])
        #expect(apns.channel == "apns" && apns.environment == "sandbox")
        #expect(try apns.given("p8") == "AuthKey.p8" && apns.given("key_id") == "ABC123DEFG")
        #expect(try apns.given("team_id") == "DEF123GHIJ")
        #expect(try apns.selector == "ios-prod")
        let p12 = try parseAdd(["--channel", "apns", "--p12", "cert.p12", "--password-env", "P12_PASSWORD"])
        #expect(try p12.given("p12") == "cert.p12" && p12.given("password") == "P12_PASSWORD")
        // A secret given as a value is pointed at its `-env` flag, never taken.
        #expect(throws: (any Error).self) {
            try parseAdd(["--channel", "oppo", "--vendor-app-id", "1", "--client-id", "k", "--client-secret", "s"])
        }
    }

    /// APNs's flags are made from its declared upload form (`UploadedCredentialForm`), with the
    /// spellings, help and refusals they had when they were written into the CLI.
    @Test func theUploadedFileFlagsKeepTheirSpellingsHelpAndRefusals() throws {
        func refusal(_ arguments: [String]) -> String {
            do {
                _ = try parseAdd(arguments)
                return ""
            } catch {
                return Tuisong.message(for: error)
            }
        }
        #expect(refusal(["--p8", "a.p8", "--pem", "b.pem"]).contains("give exactly one of --p8, --p12, --pem"))
        #expect(refusal(["--key-id", "ABC123DEFG"]).contains("give exactly one of --p8, --p12, --pem"))
        #expect(refusal(["--p8", "a.p8", "--key-id", "ABC123DEFG"]).contains("--p8 needs --key-id and --team-id"))
        #expect(
            refusal(["--pem", "b.pem", "--environment", "staging"]).contains(
                "--environment must be both, sandbox or production"))
        #expect(refusal(["--p12", "c.p12", "--password", "secret"]).contains("pass --password-env VAR"))
        #expect(refusal(["--p12", "c.p12", "--p12", "d.p12"]).contains("--p12 is given twice"))
        // A form's channel takes none of them.
        #expect(
            refusal(["--channel", "fcm", "--service-account", "key.json", "--environment", "sandbox"]).contains(
                "--channel fcm takes --service-account (and a selector) only"))
        #expect(
            refusal(["--channel", "fcm", "--service-account", "key.json", "--p8", "a.p8"]).contains(
                "--channel fcm takes --service-account (and a selector) only"))
        let help = UploadedFileFlags.discussion
        #expect(
            help.contains(
                "  --channel apns (default): one of\n      --p8 FILE --key-id KEY_ID --team-id TEAM_ID, --p12 FILE [--password-env VAR], --pem FILE [--password-env VAR]\n"
            ), "\(help)")
        #expect(help.contains("and --environment both|sandbox|production: a .p8 key serves both unless told one"))
        #expect(help.contains("\n      --p8 FILE: A .p8 token key file (with --key-id and --team-id).\n"))
        #expect(
            help.contains(
                "\n      --password-env VAR: The environment variable holding the .p12 or PEM key password.\n"))
        #expect(UploadedFileFlags.abstract == "APNs (.p8, .p12, PEM), ")
    }

    /// The proof for the CLI: the tests' binary registers `EchoTransport` with one line, and
    /// `credential add --channel echo` takes the flags its declaration makes (`--account`,
    /// `--api-key-env`), checks them by its form and stores the credential; `tuisong` itself,
    /// without that line, knows no echo channel.
    @Test func aTransportKnownOnlyFromItsDeclarationGetsItsFlags() throws {
        for binary in [CrashRecoveryTests.binary, TuisongCommand.withTestTransports] {
            guard FileManager.default.isExecutableFile(atPath: binary) else {
                Issue.record("build the executables first (swift build --build-tests): \(binary)")
                return
            }
        }
        let directory = FileManager.default.temporaryDirectory.appending(path: "tuisong-cli-echo-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        var environment = ["TUISONG_APNS_LOCAL_MOCK": "true"]
        func echoCLI(_ arguments: [String]) throws -> CommandRun {
            try TuisongCommand.run(
                arguments, in: directory, environment: environment, binary: TuisongCommand.withTestTransports)
        }
        #expect(try echoCLI(["migrate"]).status == 0)
        #expect(try echoCLI(["app", "create", "--name", "echo", "--bundle-id", "com.example.echo"]).status == 0)

        // The help as one line: ArgumentParser wraps it to the terminal's width.
        let help = try echoCLI(["credential", "add", "--help"]).output.split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
        #expect(help.contains("--channel echo: --account ACCOUNT (Account) --api-key-env VAR (API key)"), "\(help)")
        #expect(
            help.contains(
                "--channel <channel> apns (default), fcm, huawei, honor, xiaomi, oppo, vivo, harmony or echo."))

        let add = ["credential", "add", "--app", "1", "--channel", "echo"]
        let missing = try echoCLI(add + ["--account", "tester"])
        #expect(missing.status != 0 && missing.errors.contains("needs --api-key-env VAR"), "\(missing.errors)")
        let asValue = try echoCLI(add + ["--account", "tester", "--api-key", "s3cret-echo-key"])
        #expect(asValue.status != 0 && asValue.errors.contains("pass --api-key-env VAR"), "\(asValue.errors)")
        #expect(!asValue.errors.contains("s3cret"))
        environment["ECHO_KEY"] = "s3cret-echo-key"
        // The declaration's own check, in its words: one sentence, not the usage.
        let refused = try echoCLI(add + ["--account", "tester1", "--api-key-env", "ECHO_KEY"])
        #expect(refused.status == 1 && refused.errors.contains("the account is letters only"), "\(refused.errors)")
        let added = try echoCLI(add + ["--account", "tester", "--api-key-env", "ECHO_KEY"])
        #expect(added.status == 0, "\(added.errors)")
        #expect(added.json["channel"] as? String == "echo" && added.json["vendor_app_id"] as? String == "tester")
        #expect((added.json["check"] as? [String: Any])?["result"] as? String == "not_checked")
        #expect(!added.output.contains("s3cret"))

        let list = try echoCLI(["credential", "list", "--app", "1"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(list.output.utf8)) as? [[String: Any]])
        #expect(rows.contains { $0["channel"] as? String == "echo" && $0["client_id"] as? String == "tester" })

        // The same command in `tuisong`: no such channel, and its list is the build's own.
        let standard = try TuisongCommand.run(
            add + ["--account", "tester", "--api-key-env", "ECHO_KEY"], in: directory, environment: environment)
        #expect(standard.status != 0)
        #expect(
            standard.errors.contains("--channel must be one of apns, fcm, huawei, honor, xiaomi, oppo, vivo, harmony"),
            "\(standard.errors)")
    }
}
