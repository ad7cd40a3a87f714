import ArgumentParser
import Foundation
import Logging
import TuisongCore
import TuisongGateway
import TuisongPlugin
import TuisongStore

/// `tuisong app set-<vendor>` for every registered provider that declares settings, built
/// from its declarations (`PushProvider.settings`): `--app ID`, then per setting
/// `--<cliFlag> VALUE`, or for a secret `--<cliFlag>-env VAR` naming the environment
/// variable that holds it (never the command line, where `ps` would show it). Optional
/// settings may be left out; the command replaces the vendor's settings of the app as a whole.
enum VendorCommands {
    static var all: [any ParsableCommand.Type] {
        ProviderRegistry.providers.compactMap { command(for: $0) }
    }

    private static func command<Provider: PushProvider>(for provider: Provider.Type) -> (any ParsableCommand.Type)? {
        Provider.settings.isEmpty ? nil : SetVendorSettings<Provider>.self
    }
}

struct SetVendorSettings<Provider: PushProvider>: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        let flags = Provider.settings.map { setting in
            let flag = setting.isSecret ? "--\(setting.cliFlag)-env VAR" : "--\(setting.cliFlag) VALUE"
            var line = "  \(flag): \(setting.label.en)"
            if setting.isSecret { line += " (read from the environment variable VAR; stored encrypted)" }
            if setting.isUniqueAcrossApps { line += "; unique across apps" }
            if !setting.isRequired { line += "; optional" }
            if let defaultValue = setting.defaultValue { line += "; default \(defaultValue)" }
            return line
        }
        return CommandConfiguration(
            commandName: "set-\(Provider.name)",
            abstract:
                "Set an app's \(Provider.displayName.en) settings (secrets stored encrypted under the master key).",
            usage: usage.replacingOccurrences(of: "usage: ", with: "") + " [--config <config>] [--create-database]",
            discussion: "Settings:\n" + flags.joined(separator: "\n"))
    }

    @OptionGroup var options: StoreOptions
    @Option(help: "The app id.") var app: Int64
    @Argument(parsing: .allUnrecognized, help: .hidden) var settingArguments: [String] = []

    func run() async throws {
        let values = try Self.values(from: settingArguments, environment: ProcessInfo.processInfo.environment)
        let config = try options.load()
        let store = try options.openStore(config)
        defer { try? store.close() }
        guard var record = try await store.app(id: app) else { throw CommandFailure("no app with id \(app)") }
        for setting in Provider.settings where setting.isUniqueAcrossApps {
            guard let value = values[setting.key], !value.isEmpty else { continue }
            if let owner = try await store.app(vendor: Provider.name, setting: setting.storageKey, value: value),
                owner.id != app
            {
                throw CommandFailure("\(setting.cliFlag) \(value) already belongs to app \(owner.id)")
            }
        }
        let masterKey = try MasterKey.load(config.security, logger: Logger(label: "tuisong"))
        // Every app, for the settings that are unique together (one lookup per key above).
        let otherApps = Provider.settingsUniqueTogether.isEmpty ? [] : try await store.apps()
        do {
            try VendorSettingsUpdate.replace(
                vendor: Provider.name, with: values, in: &record, sealer: MasterKeySealer(masterKey: masterKey),
                otherApps: otherApps)
        } catch {
            throw CommandFailure(error.description)
        }
        do {
            try await store.updateApp(record)
        } catch let error as StoreError where error.code == .conflict {
            throw CommandFailure("another app already holds one of these \(Provider.name) values")
        }
        // A running gateway drops the app from its caches now rather than when they expire.
        await store.publish(.app(record.id))
        var shown: [String: Any] = [:]
        for setting in Provider.settings where !setting.isSecret {
            if let value = record.vendorSettings[Provider.name]?[setting.storageKey] { shown[setting.key] = value }
        }
        printJSON(["id": app, Provider.name: shown])
    }

    /// Setting key → value from `--flag VALUE`, `--flag=VALUE` and `--flag-env VAR`.
    static func values(from arguments: [String], environment: [String: String]) throws -> [String: String] {
        var values: [String: String] = [:]
        for (flag, value) in try FlagArguments.pairs(arguments, usage: usage) {
            if let setting = Provider.settings.first(where: { !$0.isSecret && $0.cliFlag == flag }) {
                values[setting.key] = value
            } else if let setting = Provider.settings.first(where: { $0.isSecret && "\($0.cliFlag)-env" == flag }) {
                guard let secret = environment[value] else {
                    throw CommandFailure("the environment variable \(value) is not set")
                }
                guard !secret.isEmpty else { throw CommandFailure("the environment variable \(value) is empty") }
                values[setting.key] = secret
            } else if Provider.settings.contains(where: { $0.isSecret && $0.cliFlag == flag }) {
                throw ValidationError("--\(flag) is a secret: pass --\(flag)-env VAR, VAR holding it")
            } else {
                throw ValidationError("unknown option --\(flag); \(usage)")
            }
        }
        for setting in Provider.settings where setting.isRequired && values[setting.key] == nil {
            let flag = setting.isSecret ? "--\(setting.cliFlag)-env" : "--\(setting.cliFlag)"
            throw ValidationError("missing \(flag); \(usage)")
        }
        return values
    }

    static var usage: String {
        let flags = Provider.settings.map { setting in
            let flag = setting.isSecret ? "--\(setting.cliFlag)-env VAR" : "--\(setting.cliFlag) VALUE"
            return setting.isRequired ? flag : "[\(flag)]"
        }
        return "usage: tuisong app set-\(Provider.name) --app ID " + flags.joined(separator: " ")
    }
}

/// Options only known at run time (declared by the registered providers), which
/// ArgumentParser hands over unparsed (`@Argument(parsing: .allUnrecognized)`).
enum FlagArguments {
    /// `--flag VALUE` and `--flag=VALUE` pairs, flags without their dashes, in order.
    static func pairs(_ arguments: [String], usage: String) throws -> [(flag: String, value: String)] {
        var pairs: [(flag: String, value: String)] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            guard argument.hasPrefix("--"), argument.count > 2 else {
                throw ValidationError("unexpected argument \"\(argument)\"; \(usage)")
            }
            let body = argument.dropFirst(2)
            if let equals = body.firstIndex(of: "=") {
                pairs.append((String(body[..<equals]), String(body[body.index(after: equals)...])))
                index += 1
            } else {
                guard index + 1 < arguments.count else { throw ValidationError("\(argument) needs a value") }
                pairs.append((String(body), arguments[index + 1]))
                index += 2
            }
        }
        return pairs
    }
}
