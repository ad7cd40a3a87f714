import Foundation
import TuisongAPNsTransport
import TuisongCore
import TuisongFCM
import TuisongHarmony
import TuisongHonor
import TuisongHuawei
import TuisongOPPO
import TuisongTransportKit
import TuisongVivo
import TuisongXiaomi

/// The transports a gateway sends through, each declared from its own folder
/// (`TransportDeclaration`: channel, token rule, config section, credential form, factory).
/// Adding a transport is one line in `standard`, as adding a vendor is one line in
/// `ProviderRegistry`. The gateway reads it from its config (`config.transports.registry`), so a
/// test can start a gateway with one more.
public struct TransportRegistry: Sendable {
    public let declarations: [TransportDeclaration]

    /// The channels whose services post delivery receipts (`TransportDeclaration.receipts`).
    public var reportingArrival: Set<PushChannel> {
        Set(declarations.filter { $0.receipts != nil }.map(\.channel.channel))
    }

    public init(_ declarations: [TransportDeclaration]) {
        var seen: Set<PushChannel> = []
        self.declarations = declarations.filter { seen.insert($0.channel.channel).inserted }
    }

    /// The transports this build ships. Its channels are declared process-wide
    /// (`ChannelCatalog`) the first time it is read: names, token rules and Android-ness for the
    /// store, the plugins and the APIs.
    public static let standard: TransportRegistry = {
        let registry = TransportRegistry([
            APNsPushTransport.declaration,
            FCMTransport.declaration,
            HuaweiService.declaration,
            HonorService.declaration,
            XiaomiService.declaration,
            OPPOService.declaration,
            VivoService.declaration,
            HarmonyService.declaration,
        ])
        ChannelCatalog.shared.install(registry.declarations.map(\.channel))
        return registry
    }()

    /// Declares the standard transports' channels process-wide (idempotent); the CLI, the
    /// config loader and the test kits call it before anything reads a channel's traits.
    public static func install() { _ = standard }

    /// This registry with more transports (a test's), which are not declared process-wide: a
    /// channel nobody declared is taken as Android-style with opaque tokens.
    public func adding(_ more: TransportDeclaration...) -> TransportRegistry {
        TransportRegistry(declarations + more)
    }

    public var channels: [PushChannel] { declarations.map(\.channel.channel) }

    /// The channel whose credentials are uploaded files (`TransportDeclaration.takesUploadedFiles`):
    /// what the uploaded-credential API, `credential add --file` and the console's file form
    /// speak for. nil: this gateway has no such transport.
    public var uploadedFilesChannel: PushChannel? { uploadedFiles?.channel.channel }

    /// The declaration of `uploadedFilesChannel`, whose `uploadedCredentialForm` checks an upload.
    public var uploadedFiles: TransportDeclaration? { declarations.first(where: \.takesUploadedFiles) }

    public func declaration(of channel: PushChannel) -> TransportDeclaration? {
        declarations.first { $0.channel.channel == channel }
    }

    /// The transport named `name`; nil when this gateway has none of that name.
    public func channel(named name: String) -> PushChannel? {
        PushChannel(rawValue: name).flatMap { declaration(of: $0)?.channel.channel }
    }

    /// The transports an operator adds a credential to through a declared form, in order.
    /// (The one whose credentials are uploaded files is `uploadedFilesChannel`.)
    public var withCredentialForms: [TransportDeclaration] { declarations.filter { $0.credentialForm != nil } }

    /// `fcm, huawei, … or vivo`: the channels with a declared credential form.
    public var formChannelList: String {
        PushChannel.list(withCredentialForms.map(\.channel.channel), \.rawValue, "or")
    }

    /// The declared forms as the admin API serves them (`GET /admin/api/session`,
    /// `features.transports`): what the console renders its credential form from, with each
    /// service's name in both of the console's languages and its codes' meanings.
    public var formsObject: [[String: Any]] {
        withCredentialForms.map { declaration in
            [
                "channel": declaration.name,
                "display_name": declaration.channel.displayName,
                "display_name_text": [
                    "en": declaration.channel.displayName,
                    "zh": declaration.channel.displayNameZH ?? declaration.channel.displayName,
                ],
                // What the service's own codes mean, for the console's failure counts.
                "service_codes": declaration.serviceCodes.mapValues(\.json),
                "fields": (declaration.credentialForm?.fields ?? []).map { Self.fieldObject($0) },
            ]
        }
    }

    /// The declared upload form of `uploadedFiles` as the admin API serves it
    /// (`features.uploaded_files`): what the console renders its file upload form from. Each
    /// file is one `kind` of the upload (`p8`), with the fields it needs (always sent) and may
    /// be given with (sent when filled); `hint_text` is the console's hint under a field, and
    /// `environment_hint_text` under the environment choice. nil: no such transport.
    public var uploadedFormObject: [String: Any]? {
        guard let declaration = uploadedFiles, let form = declaration.uploadedCredentialForm else { return nil }
        func hint(_ field: CredentialForm.Field) -> [String: String] {
            let text = form.consoleHints[field.name] ?? LocalizedText(en: field.help, zh: field.helpZH ?? field.help)
            return ["en": text.en, "zh": text.zh]
        }
        return [
            "channel": declaration.name,
            "display_name": declaration.channel.displayName,
            "display_name_text": [
                "en": declaration.channel.displayName,
                "zh": declaration.channel.displayNameZH ?? declaration.channel.displayName,
            ],
            "files": form.files.map { file -> [String: Any] in
                Self.fieldObject(file).merging(
                    [
                        "needs": form.needs[file.name] ?? [], "optional": form.optional[file.name] ?? [],
                        "hint_text": hint(file),
                    ], uniquingKeysWith: { $1 })
            },
            "fields": form.fields.map { field -> [String: Any] in
                Self.fieldObject(field).merging(
                    ["hint_text": hint(field), "max_length": field.rule.length.upperBound], uniquingKeysWith: { $1 })
            },
            "environment_hint_text": form.consoleHints["environment"].map { ["en": $0.en, "zh": $0.zh] } ?? NSNull(),
        ]
    }

    /// A declared field as the admin API serves it, for the console's input.
    private static func fieldObject(_ field: CredentialForm.Field) -> [String: Any] {
        [
            "name": field.name, "kind": field.kind.rawValue, "required": field.required,
            "label": ["en": field.label.en, "zh": field.label.zh], "help": field.help,
            "help_text": ["en": field.help, "zh": field.helpZH ?? field.help],
            "placeholder": field.placeholder, "numeric": field.numeric, "accept": field.accept,
            "refusal_text": field.refusal.map { ["en": $0.en, "zh": $0.zh] } ?? NSNull(),
        ]
    }
}
