import ArgumentParser
import Foundation
import TuisongCore
import TuisongCrypto
import TuisongGateway
import TuisongLookAlikes
import TuisongPlugin
import TuisongStore
import TuisongTransportKit

struct CredentialCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "credential", abstract: "Manage push credentials (\(PushChannel.list())).",
        subcommands: [Add.self, List.self, Show.self, ReceiptKey.self])

    struct Add: AsyncParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(
                abstract:
                    "Add a push credential to an app: \(UploadedFileFlags.abstract)\(PushChannel.list(TuisongCommandLine.transports.withCredentialForms.map(\.channel.channel), \.displayName, "or")).",
                discussion: "Each channel's flags:\n" + UploadedFileFlags.discussion + ChannelFormFlags.discussion
                    + "\n"
                    + SelectorFlags.discussion)
        }
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64
        @Option(help: "\(UploadedFileFlags.channelHelp)\(TuisongCommandLine.transports.formChannelList).")
        var channel: String = UploadedFileFlags.channel?.rawValue ?? ""
        @Option(help: "\(UploadedFileFlags.environmentHelp)") var environment: String?
        @Option(
            name: .customLong("selector"),
            help:
                "The credential's selector: devices registered with it are sent through it (or a provider's own flag, above)."
        )
        var genericSelector: String?
        /// The channel's form fields (`--vendor-app-id`, `--client-secret-env`, `--service-account`;
        /// an uploaded file's `--p8`, `--key-id`, `--password-env`: declared by its transport) and a
        /// provider's own selector flag (`--<cliFlag> VALUE`).
        @Argument(parsing: .allUnrecognized, help: .hidden) var selectorArguments: [String] = []

        /// The declared form of `--channel` (nil for the uploaded-files channel and unknown names).
        var form: CredentialForm? {
            TuisongCommandLine.transports.channel(named: channel).flatMap {
                TuisongCommandLine.transports.declaration(of: $0)?.credentialForm
            }
        }

        /// The uploaded-file form, when `--channel` is the channel whose credentials are files.
        var uploadedForm: UploadedCredentialForm? {
            UploadedFileFlags.declaration.flatMap { $0.name == channel ? $0.uploadedCredentialForm : nil }
        }

        /// The fields `--channel` takes as flags: its declared form's, or the uploaded-file form's.
        var flagFields: [CredentialForm.Field]? {
            form?.fields ?? uploadedForm.map { $0.files + $0.fields }
        }

        /// The form's flags given, and the arguments left for the selector flags.
        var split: (fields: [(field: CredentialForm.Field, value: String)], rest: [String]) {
            get throws { try ChannelFormFlags.split(selectorArguments, fields: flagFields) }
        }

        /// The value given for the field named `name`, if any.
        func given(_ name: String) throws -> String? {
            try split.fields.first { $0.field.name == name }?.value
        }

        /// The credential's selector, from `--selector` or one provider's flag; nil = none.
        var selector: String? {
            get throws { try SelectorFlags.selector(generic: genericSelector, arguments: try split.rest) }
        }

        func validate() throws {
            let known =
                (UploadedFileFlags.channel.map { [$0.rawValue] } ?? [])
                + TuisongCommandLine.transports.withCredentialForms.map(\.name)
            guard uploadedForm != nil || form != nil else {
                throw ValidationError("--channel must be one of \(known.joined(separator: ", "))")
            }
            let (fields, rest) = try split
            if let form {
                // Another channel's file flags (`--p8`) are told apart from a mistyped selector flag.
                let fileFlags = Set(UploadedFileFlags.fields.map(\.cliFlag))
                guard environment == nil, !rest.contains(where: fileFlags.contains) else {
                    throw ValidationError(
                        "--channel \(channel) takes \(ChannelFormFlags.list(form.fields.map(\.cliFlag))) (and a selector) only"
                    )
                }
            }
            _ = try selector
            guard let form else {
                let uploaded = uploadedForm!
                let files = uploaded.files.filter { file in fields.contains { $0.field == file } }
                guard let file = files.first, files.count == 1 else {
                    throw ValidationError(
                        "give exactly one of \(uploaded.files.map(\.cliFlag).joined(separator: ", "))")
                }
                let needed = (uploaded.needs[file.name] ?? []).compactMap { name in
                    uploaded.fields.first { $0.name == name }
                }
                if needed.contains(where: { field in !fields.contains { $0.field == field } }) {
                    throw ValidationError(
                        "\(file.cliFlag) needs \(ChannelFormFlags.list(needed.map(\.cliFlag)))")
                }
                if let environment, environment != "both", PushEnvironment(rawValue: environment) == nil {
                    throw ValidationError("--environment must be both, sandbox or production")
                }
                return
            }
            let missing = form.fields.filter { field in field.required && !fields.contains { $0.field == field } }
            guard missing.isEmpty else {
                throw ValidationError(
                    "--channel \(channel) needs \(ChannelFormFlags.list(missing.map { "\($0.cliFlag) \(ChannelFormFlags.metavar($0))" }))"
                )
            }
        }

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            guard try await store.app(id: app) != nil else { throw CommandFailure("no app with id \(app)") }
            if let pushChannel = TuisongCommandLine.transports.channel(named: channel), form != nil {
                return try await addChannelCredential(pushChannel, store: store, config: config)
            }
            // The one file given (`validate`), read as its kind is, with the fields it came with.
            var values: [String: String] = [:]
            var file: (kind: CredentialKind, bytes: [UInt8])?
            for (field, value) in try split.fields {
                switch field.kind {
                case .file:
                    guard let data = FileManager.default.contents(atPath: value) else { throw unreadable(value) }
                    file = CredentialKind(rawValue: field.name).map { ($0, Array(data)) }
                case .secret: values[field.name] = try environmentValue(value)
                case .text: values[field.name] = value
                }
            }
            guard let file else { throw CommandFailure("\(channel) takes no file of that kind") }
            let upload = UploadedCredentialForm.upload(kind: file.kind, file: file.bytes, values: values)
            let masterKey = try MasterKey.load(config.security, logger: makeLogger("tuisong", level: "warning"))
            let service = CredentialService(
                store: store, masterKey: masterKey, uploadedFiles: config.transports.registry.uploadedFiles)
            var record: CredentialRecord
            do {
                let saved = try await service.addOnce(
                    upload, appID: app, environment: environment.flatMap(PushEnvironment.init(rawValue:)),
                    selector: try selector)
                record = saved.record
                guard saved.added else { return try printRepeat(record) }
            } catch let error as CredentialError {
                // What the file holds, found at run time: one sentence, not the usage.
                throw CommandFailure(error.message)
            }
            // A key is probed once by its transport (a push to a made-up token): a refused one is
            // kept, failing.
            let topic = try await store.app(id: app)?.bundleID ?? ""
            let check = await GatewayRuntime.probeKey(
                record, topic: topic, config: config, credentials: service, store: store)
            if case .refused(let reason) = check {
                try await store.setCredentialStatus(id: record.id, status: "failing", reason: reason)
                record.status = "failing"
                record.statusReason = reason
            }
            let released =
                check.isRefused
                ? 0
                : try await store.releaseHeldDeliveries(
                    appID: app, routes: record.environments.map { .environment($0) }, selector: record.selector,
                    now: Date())
            // A running gateway looks the app's credentials up again, and sends what was released.
            await store.publish(.credentials(appID: app))
            if released > 0 { await store.publish(.wake) }
            var summary = CredentialView.object(record)
            summary["released_deliveries"] = released
            summary["check"] = check.object
            summary["existing"] = false
            printJSON(summary)
            if case .refused(let reason) = check {
                let serving =
                    record.selector == nil
                    ? try await store.activeCredential(
                        appID: app, channel: record.channel, environment: record.environment)
                    : nil
                throw CredentialRefusal(
                    service: record.channel.displayName, reason: reason, saved: record.id,
                    serving: serving.map { ($0.id, $0.isFailing) })
            }
        }

        /// A credential of a channel's declared form (a service-account file, an OAuth client…),
        /// checked and sealed.
        private func addChannelCredential(_ pushChannel: PushChannel, store: any GatewayStore, config: GatewayConfig)
            async throws
        {
            var input = CredentialFormInput()
            for (field, value) in try split.fields {
                switch field.kind {
                case .file:
                    guard let data = FileManager.default.contents(atPath: value) else { throw unreadable(value) }
                    input.files[field.name] = Array(data)
                case .secret:
                    input.values[field.name] = try environmentValue(value)
                case .text:
                    input.values[field.name] = value
                }
            }
            let upload = ChannelCredentialUpload.form(channel: pushChannel, input)
            // One logger: the logging system is set up once per process.
            let logger = makeLogger("tuisong", level: "warning")
            let masterKey = try MasterKey.load(config.security, logger: logger)
            var record: ChannelCredentialRecord
            let service = ChannelCredentialService(
                store: store, masterKey: masterKey, testTokenHosts: ChannelCredentialService.testTokenHosts(config),
                registry: config.transports.registry)
            do {
                let saved = try await service.addOnce(upload, appID: app, selector: try selector)
                record = saved.record
                guard saved.added else {
                    var summary = ChannelCredentialView.object(record)
                    summary["existing"] = true
                    printJSON(summary)
                    if record.isFailing {
                        throw CommandFailure(
                            "the same credential was added before as credential \(record.id), which the service refused (\(record.statusReason ?? "failing"))"
                        )
                    }
                    return
                }
            } catch let error as CredentialError {
                // What the file holds, found at run time: one sentence, not the usage.
                throw CommandFailure(error.message)
            }
            // One sign-in with the service: a refused credential is kept, marked failing.
            let check = await ChannelCredentialCheck.check(record, config: config, service: service, logger: logger)
            if case .refused(let reason) = check {
                try await store.setChannelCredentialStatus(id: record.id, status: "failing", reason: reason)
                record.status = "failing"
                record.statusReason = reason
            }
            // The service's deliveries held for want of a credential go out with a working one.
            let released =
                check.isRefused
                ? 0
                : try await store.releaseHeldDeliveries(
                    appID: app, routes: [.channel(record.channel)], selector: record.selector, now: Date())
            // A running gateway looks the app's credentials up again, and sends what was released.
            await store.publish(.channelCredentials(appID: app))
            if released > 0 { await store.publish(.wake) }
            var summary = ChannelCredentialView.object(record)
            summary["released_deliveries"] = released
            summary["check"] = check.object
            summary["existing"] = false
            printJSON(summary)
            if case .refused(let reason) = check {
                let serving = try await store.activeChannelCredential(
                    appID: app, channel: record.channel, selector: record.selector)
                throw CredentialRefusal(
                    service: config.transports.registry.declaration(of: pushChannel)?.channel.displayName
                        ?? pushChannel.rawValue, reason: reason, saved: record.id,
                    serving: serving.map { ($0.id, $0.isFailing) })
            }
        }

        /// An uploaded file credential added before: printed as it stands, nothing probed or
        /// released again; a refused one still fails the command.
        private func printRepeat(_ record: CredentialRecord) throws {
            var summary = CredentialView.object(record)
            summary["existing"] = true
            printJSON(summary)
            if record.isFailing {
                throw CommandFailure(
                    "the same credential was added before as credential \(record.id), which \(record.channel.displayName) refused (\(record.statusReason ?? "failing"))"
                )
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List an app's credentials of every channel (never their secrets).")
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            let uploaded = try await store.credentials(appID: app).map { record -> [String: Any] in
                var object = CredentialView.object(record)
                object["channel"] = record.channel.rawValue
                return object
            }
            let android = ChannelCredentialView.objects(try await store.formCredentials(appID: app))
            printJSON(uploaded + android)
        }
    }
}

extension CredentialCommand {
    /// What to register in each service's receipt configuration for an app, the callback key
    /// included: the operator copies it into the service's console.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print what to register in each service's receipt configuration for an app.",
            discussion: """
                Prints {"app": ID, "receipts": [{"channel", "url", "callback_user_name", "callback_key"}]}: \
                the receipt URL (under receipts.public_url, or local mode's listener) and, for the \
                services that sign their receipts (\(ReceiptSigning.displayNames)), the callback user name \
                and key to enter in the service's console (made on first need). The key is a secret: this \
                prints it for you to copy; keep the output out of logs.
                """)
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            guard try await store.app(id: app) != nil else { throw ValidationError("no app \(app)") }
            let masterKey = try MasterKey.load(config.security, logger: makeLogger("tuisong", level: "warning"))
            let service = ReceiptCallbackCredentialService(
                store: store, masterKey: masterKey, registry: config.transports.registry, clock: SystemClock())
            printJSON([
                "app": app,
                "receipts": try await service.registrations(appID: app, baseURL: ReceiptBaseURL.configured(config)),
            ])
        }
    }

    /// Rotates an app's callback key with a service, or sets the user name and key to what the
    /// operator entered in the service's console.
    struct ReceiptKey: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "receipt-key",
            abstract: "Rotate or set an app's receipt callback user name and key with a service.",
            discussion: """
                --rotate makes a new key under the same user name; --user-name NAME with \
                --key-env VAR sets both to what was entered in the service's console (the key from \
                an environment variable, never a flag). Prints the service's registration as \
                `credential show` does. A running gateway verifies with the new key at once; the old \
                key stops verifying at once on PostgreSQL (the nodes are told) and within 5 seconds \
                beside a SQLite gateway (which reads it again then).
                """)
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64
        @Option(help: "The service: \(ReceiptSigning.names).") var channel: String
        @Flag(help: "Make a new random key.") var rotate = false
        @Option(name: .customLong("user-name"), help: "The callback user name entered in the service's console.")
        var userName: String?
        @Option(name: .customLong("key-env"), help: "The environment variable holding the callback key.")
        var keyEnv: String?

        func validate() throws {
            guard rotate != (userName != nil || keyEnv != nil) else {
                throw ValidationError("give either --rotate or --user-name with --key-env")
            }
            if !rotate, userName == nil || keyEnv == nil {
                throw ValidationError("--user-name and --key-env go together")
            }
        }

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            guard try await store.app(id: app) != nil else { throw ValidationError("no app \(app)") }
            let masterKey = try MasterKey.load(config.security, logger: makeLogger("tuisong", level: "warning"))
            let service = ReceiptCallbackCredentialService(
                store: store, masterKey: masterKey, registry: config.transports.registry, clock: SystemClock())
            guard let pushChannel = PushChannel(rawValue: channel), service.uses(pushChannel) else {
                throw ValidationError(
                    "--channel is one of \(service.channels.map(\.rawValue).joined(separator: ", ")) (the services that sign receipts)"
                )
            }
            if rotate {
                _ = try await service.rotate(appID: app, channel: pushChannel)
            } else if let userName, let keyEnv {
                guard let key = ProcessInfo.processInfo.environment[keyEnv], CallbackCredentials.isValid(key) else {
                    throw ValidationError("$\(keyEnv) must hold the callback key: 1–64 printable ASCII characters")
                }
                guard CallbackCredentials.isValid(userName) else {
                    throw ValidationError("--user-name is 1–64 printable ASCII characters without spaces")
                }
                try await service.set(
                    CallbackCredentials(userName: userName, key: key), appID: app, channel: pushChannel)
            }
            await store.publish(.receiptCallbackCredentials(appID: app))
            let all = try await service.registrations(appID: app, baseURL: ReceiptBaseURL.configured(config))
            printJSON(all.first { $0["channel"] == pushChannel.rawValue } ?? [:])
        }
    }
}

/// The services that sign their receipts with an app's callback credentials
/// (`ReceiptDeclaration.usesCallbackCredentials`), as `credential show` and `receipt-key` name them.
enum ReceiptSigning {
    static var channels: [PushChannel] {
        TuisongCommandLine.transports.declarations.filter { $0.receipts?.usesCallbackCredentials == true }
            .map(\.channel.channel)
    }

    /// The channel names, `a or b`.
    static var names: String { PushChannel.list(channels, \.rawValue, "or") }

    /// The display names, `A, B`.
    static var displayNames: String { channels.map(\.displayName).joined(separator: ", ") }
}

/// `credential add` of a credential the service refused: saved (shown failing), never put in
/// place of one that works, and the command fails so a script or an operator rotating keys
/// notices.
struct CredentialRefusal: Error, CustomStringConvertible {
    var service: String
    var reason: String
    /// The credential just saved.
    var saved: Int64
    /// The credential pushes of the route use now, and whether it is failing too.
    var serving: (id: Int64, isFailing: Bool)?

    var description: String {
        let head = "\(service) refused the credential (\(reason)): saved as credential \(saved), marked failing"
        if let serving, serving.id != saved, !serving.isFailing {
            return head + "; credential \(serving.id) stays in use"
        }
        return head + "; no working credential is left, so pushes stay held until one is added"
    }
}

/// The selector flags of `credential add`: the generic `--selector`, and each registered
/// provider's own (`PushProvider.credentialSelector`), checked by that provider's rule.
/// The flags of a channel's declared credential form: `--<field>` (a text), `--<field>-env VAR`
/// (a secret, never a flag: shells keep history), `--<field> FILE` (a file).
enum ChannelFormFlags {
    static func metavar(_ field: CredentialForm.Field) -> String {
        switch field.kind {
        case .text: field.name.uppercased()
        case .secret: "VAR"
        case .file: "FILE"
        }
    }

    static func list(_ items: [String]) -> String {
        items.count < 2 ? items.joined() : items.dropLast().joined(separator: ", ") + " and " + items.last!
    }

    /// Each declared form's flags, for `credential add --help`.
    static var discussion: String {
        TuisongCommandLine.transports.withCredentialForms.map { declaration in
            let fields = (declaration.credentialForm?.fields ?? []).map { field in
                let flag = "\(field.cliFlag) \(metavar(field))"
                return field.required ? "\(flag) (\(field.label.en))" : "[\(flag)] (\(field.label.en))"
            }
            return "  --channel \(declaration.name): \(fields.joined(separator: " "))\n"
        }.joined()
    }

    /// Splits the unrecognised arguments into the form's fields and the rest (selector flags).
    static func split(_ arguments: [String], fields formFields: [CredentialForm.Field]?) throws -> (
        fields: [(field: CredentialForm.Field, value: String)], rest: [String]
    ) {
        guard let formFields else { return ([], arguments) }
        var fields: [(field: CredentialForm.Field, value: String)] = []
        var rest: [String] = []
        for (flag, value) in try FlagArguments.pairs(arguments, usage: "flags: --NAME VALUE") {
            if let field = formFields.first(where: { $0.cliFlag == "--" + flag }) {
                guard !fields.contains(where: { $0.field == field }) else {
                    throw ValidationError("--\(flag) is given twice")
                }
                fields.append((field, value))
            } else if formFields.contains(where: { $0.kind == .secret && $0.cliFlag == "--\(flag)-env" }) {
                // `--api-key VALUE` is the natural guess for a declared secret: point at its flag.
                throw ValidationError(
                    "unknown option --\(flag): a secret is never a flag (shells keep history); "
                        + "pass --\(flag)-env VAR, VAR holding it")
            } else {
                rest += ["--" + flag, value]
            }
        }
        return (fields, rest)
    }
}

/// The flags of the channel whose credentials are uploaded files (`--p8 FILE --key-id ID`…), made
/// from its declared `UploadedCredentialForm` as `ChannelFormFlags` makes a form's.
enum UploadedFileFlags {
    static var declaration: TransportDeclaration? { TuisongCommandLine.transports.uploadedFiles }
    static var channel: PushChannel? { declaration?.channel.channel }

    /// `<display name> (.p8, .p12, PEM), ` for the abstract.
    static var abstract: String {
        guard let declaration, let form = declaration.uploadedCredentialForm else { return "" }
        let kinds = form.files.compactMap { CredentialKind(rawValue: $0.name)?.displayName }.joined(separator: ", ")
        return "\(declaration.channel.displayName) (\(kinds)), "
    }

    /// Its flags' fields, files first.
    static var fields: [CredentialForm.Field] {
        declaration?.uploadedCredentialForm.map { $0.files + $0.fields } ?? []
    }

    /// `<name> (default), ` for `--channel`'s help.
    static var channelHelp: String { channel.map { "\($0.rawValue) (default), " } ?? "" }

    static var environmentHelp: String {
        "\(channel?.displayName ?? "An uploaded file"): \(declaration?.uploadedCredentialForm?.environmentHelp ?? "both, sandbox or production.")"
    }

    static func flag(_ field: CredentialForm.Field, _ needs: [CredentialForm.Field]) -> String {
        let own = "\(field.cliFlag) \(ChannelFormFlags.metavar(field))"
        return ([own] + needs.map { "\($0.cliFlag) \(ChannelFormFlags.metavar($0))" }).joined(separator: " ")
    }

    /// Its lines of `credential add --help`: each file with what it needs, the optional fields
    /// in brackets, and how environments are chosen.
    static var discussion: String {
        guard let declaration, let form = declaration.uploadedCredentialForm else { return "" }
        let files = form.files.map { file in
            let needs = (form.needs[file.name] ?? []).compactMap { name in form.fields.first { $0.name == name } }
            let optional = (form.optional[file.name] ?? []).compactMap { name in
                form.fields.first { $0.name == name }
            }
            return flag(file, needs) + optional.map { " [\(flag($0, []))]" }.joined()
        }
        // Each flag's own help, as `--help` listed it when the flags were options of their own.
        let each = (form.files + form.fields).map { field in
            "\n      \(field.cliFlag) \(ChannelFormFlags.metavar(field)): \(field.help)"
        }
        return """
              --channel \(declaration.name) (default): one of
                  \(files.joined(separator: ", "))\(each.joined())
                and --environment both|sandbox|production: \(form.environments)
              Adding what was added before (the same app, channel, environment, selector and
                secret) adds nothing: the credential saved before is printed, "existing": true.

            """
    }
}

enum SelectorFlags {
    static var declarations: [CredentialSelectorDeclaration] {
        ProviderRegistry.providers.compactMap { $0.credentialSelector }
    }

    static var flagList: String {
        let flags = ["--selector"] + declarations.map { "--\($0.cliFlag)" }
        return flags.count < 2 ? flags.joined() : flags.dropLast().joined(separator: ", ") + " or " + flags.last!
    }

    static var discussion: String {
        "Selector flags (at most one):\n  --selector VALUE: any selector"
            + declarations.map { "\n  --\($0.cliFlag) VALUE: \($0.help)" }.joined()
    }

    /// The one selector given, checked (by its provider's rule for a provider's flag), or nil.
    static func selector(generic: String?, arguments: [String]) throws -> String? {
        let usage = "selector flags: \(flagList) VALUE"
        var given: [(flag: String, value: String)] = generic.map { [("selector", $0)] } ?? []
        for (flag, value) in try FlagArguments.pairs(arguments, usage: usage) {
            guard let declaration = declarations.first(where: { $0.cliFlag == flag }) else {
                // `--client-secret VALUE` is the natural guess: point at the flag that exists.
                if ["client-secret", "password"].contains(flag) {
                    throw ValidationError(
                        "unknown option --\(flag): a secret is never a flag (shells keep history); "
                            + "pass --\(flag)-env VAR, VAR holding it")
                }
                throw ValidationError("unknown option --\(flag); \(usage)")
            }
            if let problem = declaration.problem(value) { throw ValidationError("--\(flag) \(problem)") }
            given.append((flag, value))
        }
        guard given.count <= 1 else { throw ValidationError("give at most one of \(flagList), not several") }
        guard let (flag, value) = given.first else { return nil }
        do {
            guard let selector = try CredentialSelector.validated(value) else {
                throw ValidationError("--\(flag) must not be blank")
            }
            return selector
        } catch let error as CredentialError {
            throw ValidationError("--\(flag): \(error.message)")
        }
    }
}

/// The look-alikes' command (`tuisong <command>`), named as the port's default look-alike
/// declares (`LookAlikeRegistry.legacyNames`), as are the files it keeps.
struct LookAlikeCommand: AsyncParsableCommand {
    static let names = LookAlikeRegistry.standard.legacyNames
    static let configuration = CommandConfiguration(
        commandName: names.command,
        abstract:
            "Run the bundled \(PushChannel.list()) look-alikes (TLS + HTTP/2, one port) for tests and benchmarks.",
        discussion: """
            One port serves \(LookAlikeRegistry.standard.declarations.filter(\.isPortDefault).map(\.summary)
                .joined(separator: ", ")) and each other look-alike on its own paths: \
            \(LookAlikeRegistry.standard.declarations.filter { !$0.isPortDefault }.map(\.summary)
                .joined(separator: "; ")). The banner \
            prints each URL and the generated credentials; a service-account key file a client loads is \
            written next to the CA file.
            """)
    @Option(help: "Address to listen on.") var host: String = "127.0.0.1"
    @Option(help: "Port (0 = any free port).") var port: Int = 2197
    @Option(
        name: .customLong("setup"),
        help: """
            Where the throwaway CA, server certificate, provider-token key and the other look-alikes' \
            credentials (\(LookAlikeRegistry.standard.declarations.filter { !$0.isPortDefault }.map(\.service.rawValue)
                .joined(separator: ", "))) are kept \
            (created if absent; a file without the newer ones gains them).
            """)
    var setupPath: String = "data/\(Self.names.command)-setup.json"
    @Option(name: .customLong("bundle-id"), help: "The bundle id of the generated client certificate.")
    var bundleID: String = "tuisong.local"
    @Option(
        name: .customLong("max-streams"),
        help: "SETTINGS_MAX_CONCURRENT_STREAMS after the first valid token or Android request.")
    var maxStreams: Int = 1000
    @Option(name: .customLong("streams-before-token"), help: "Streams allowed before the first valid provider token.")
    var streamsBeforeToken: Int = 1
    @Option(name: .customLong("threads"), help: "Event loop threads.") var threads: Int = 1
    @Option(name: .customLong("latency-ms"), help: "Delay every response by this much.") var latency: Int = 0
    @Option(
        name: .customLong("faults"),
        help: """
            A JSON file of faults to inject: {"tokenPrefixes": {"410": {"status": 410, "reason": "Unregistered"}}, \
            "latencyMilliseconds", "goawayAfterRequests", "dropConnectionAfterRequests", \
            "lowerStreamLimitAfterRequests", "loweredStreamLimit", "ignorePings", \
            "androidTokenPrefixes": {"gone-": {"kind": "unregistered"}, "slow-": {"kind": "quotaExceeded", \
            "retryAfterSeconds": 30}}} (all optional; Android kinds: unregistered, invalidArgument, \
            quotaExceeded, unavailable, internal).
            """)
    var faultsFile: String?
    @Option(
        name: .customLong("config"),
        help: """
            A JSON file in LookAlikeConfiguration's shape. Its clientCertificateCAPEMs and \
            \(LookAlikeRegistry.standard.declarations.flatMap(\.configurationKeys).map { "\($0.key) (\($0.shape))" }
                .joined(separator: ", ")) are trusted besides the generated ones; \
            accessTokenLifetimeSeconds, maxTokenAgeSeconds, recordedNotificationLimit and faults apply when \
            present. Command-line options win.
            """)
    var configFile: String?
    @Flag(
        name: .customLong("magic-tokens"),
        help: """
            Answer hex device tokens starting 410 / 400bad / 429 / 500 with that error, and Android tokens \
            starting unregistered- / invalid- / quota- / unavailable- / internal- likewise, each service in \
            its own way (quota- is the service's daily-limit answer where it has one; local mode's set).
            """)
    var magicTokens = false
    @Flag(name: .customLong("log-requests"), help: "Print every request as a JSON line.") var logRequests = false
    @Option(
        name: .customLong("receipts"),
        help: """
            A file holding `tuisong credential show --app ID`'s output: while it exists, the look-alike of \
            each service that posts receipts posts one (arrived) of every accepted push as its service does \
            (to that app's receipt URL, or to the URL the push names; signed where the service signs). Read \
            for each push, so it may be written, or removed, while the look-alikes run.
            """)
    var receiptsFile: String?

    func run() async throws {
        // OpenSSL writes to sockets with write(2): a client that hangs up while its answers are
        // being written must not end the mock (as `serve` does, GatewayRuntime.start).
        signal(SIGPIPE, SIG_IGN)
        // Before anything is created on disk: a bad faults file changes nothing.
        var faults = LookAlikeConfiguration.Faults()
        if let faultsFile {
            guard let data = FileManager.default.contents(atPath: faultsFile) else {
                throw unreadable(faultsFile)
            }
            do {
                faults = try JSONDecoder().decode(LookAlikeConfiguration.Faults.self, from: data)
                // Each look-alike reads its own faults (the port default's tokenPrefixes) as it would start.
                try LookAlikeRegistry.standard.check(LookAlikeConfiguration(faults: faults))
            } catch {
                throw CommandFailure("\(faultsFile) is not a valid faults file: \(error)")
            }
        }
        var fileConfiguration: (configuration: LookAlikeConfiguration, keys: Set<String>)?
        if let configFile {
            guard let data = FileManager.default.contents(atPath: configFile) else {
                throw unreadable(configFile)
            }
            do {
                let decoded = try JSONDecoder().decode(LookAlikeConfiguration.self, from: data)
                try LookAlikeRegistry.standard.check(decoded)
                let keys = (try JSONSerialization.jsonObject(with: data) as? [String: Any]).map { Set($0.keys) } ?? []
                fileConfiguration = (decoded, keys)
            } catch {
                throw CommandFailure("\(configFile) is not a valid mock configuration: \(error)")
            }
        }
        let setup = try LookAlikeLocalSetup.loadOrGenerate(at: setupPath, bundleID: bundleID)
        var configuration = setup.configuration(host: host, port: port)
        configuration.faults = faults
        if let (file, keys) = fileConfiguration {
            configuration.clientCertificateCAPEMs += file.clientCertificateCAPEMs
            // Each look-alike's lists are joined (what it trusts besides the generated ones),
            // anything else it names replaced (the port default's maxTokenAgeSeconds).
            configuration.addLookAlikeSettings(of: file)
            if keys.contains("accessTokenLifetimeSeconds") {
                configuration.accessTokenLifetimeSeconds = file.accessTokenLifetimeSeconds
            }
            if keys.contains("recordedNotificationLimit") {
                configuration.recordedNotificationLimit = file.recordedNotificationLimit
            }
            if keys.contains("faults") && faultsFile == nil { configuration.faults = file.faults }
        }
        configuration.maxConcurrentStreams = maxStreams
        configuration.streamsBeforeFirstValidToken = streamsBeforeToken
        configuration.eventLoopThreads = threads
        if magicTokens { configuration.faults.addTokenPrefixes(of: .magicTokenPrefixes) }
        if latency > 0 { configuration.faults.latencyMilliseconds = latency }
        configuration.logRequests = logRequests
        let signals = SignalWaiter(signals: [SIGINT, SIGTERM])
        // One logger: making one bootstraps the process's logging, which may happen once.
        let logger = makeLogger(Self.names.command, level: "info")
        // Unbuffered, one write per line: whoever reads the pipe sees each request at once.
        let server = try LookAlikeServer(
            configuration: configuration, certificate: setup.serverCertificate, key: setup.serverKey,
            requestLog: { line in FileHandle.standardOutput.write(Data((line + "\n").utf8)) }, logger: logger)
        try server.start()
        if let receiptsFile { server.sendReceipts(to: try FileReceiptSink(path: receiptsFile, logger: logger)) }
        let directory = (setupPath as NSString).deletingLastPathComponent
        let filePrefix = (directory.isEmpty ? "." : directory) + "/\(Self.names.command)-"
        let caPath = filePrefix + "ca.pem"
        try setup.writeCAFile(to: caPath)
        let base = "https://\(host):\(server.port)"
        var banner: [String: Any] = [:]
        for declaration in LookAlikeRegistry.standard.declarations {
            let entry = try declaration.banner(setup, base, filePrefix)
            // The port's default's entries are the banner's own (p8_file, key_id, … for the scripts).
            if declaration.isPortDefault {
                banner.merge(entry) { _, new in new }
            } else {
                banner[declaration.service.rawValue] = entry
            }
        }
        banner.merge(["url": base, "port": server.port, "ca_file": caPath]) { _, new in new }
        printJSON(banner)
        fflush(nil)
        _ = await signals.wait()
        let stats = server.statistics
        var counts: [String: Any] = [
            "connections_accepted": stats.connectionsAccepted, "connections_dropped": stats.connectionsDropped,
            "goaways_sent": stats.goawaysSent, "refused_streams": stats.refusedStreams,
            "stream_limit_lowerings": stats.streamLimitLowerings,
        ]
        for declaration in LookAlikeRegistry.standard.declarations {
            let summary = server.statisticsSummary(of: declaration.service)
            // The port's default's counts are the top level's (`requests`), as its banner entries are.
            if declaration.isPortDefault {
                counts.merge(summary) { _, new in new }
            } else {
                counts[declaration.service.rawValue] = summary
            }
        }
        server.shutdown()
        printJSON(counts)
    }
}
