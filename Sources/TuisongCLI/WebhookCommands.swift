import ArgumentParser
import Foundation
import TuisongCore
import TuisongGateway

/// `tuisong webhook add|list|remove`: an app's webhook endpoints, as the native API manages
/// them (the same checks; the secret printed once by `add`).
struct WebhookCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook", abstract: "Manage an app's webhook endpoints (docs/webhooks.md).",
        subcommands: [Add.self, List.self, Remove.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add an endpoint; prints it with its secret (whsec_…), shown this once.")
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64
        @Option(help: "The endpoint's URL (https; http too when webhooks.allow_private_networks is on).")
        var url: String
        @Option(
            name: .customLong("event"),
            help: ArgumentHelp(
                "An event to send (repeat the flag); default: message.completed, device.invalidated, credential.failing.",
                valueName: "name"))
        var events: [String] = []
        @Option(help: "A note for people.") var description: String?

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            let masterKey = try MasterKey.load(config.security, logger: makeLogger("tuisong", level: "warning"))
            let webhooks = WebhookEndpoints(
                store: store, box: masterKey.box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks)
            do {
                let (endpoint, secret) = try await webhooks.create(
                    appID: app, url: url, events: events.isEmpty ? nil : events, description: description)
                var object = WebhookEndpoints.view(endpoint)
                object["secret"] = secret
                printJSON(object)
            } catch let error as WebhookError {
                throw CommandFailure(error.message)
            } catch let error as StoreError where error.code == .notFound {
                throw CommandFailure("no app \(app)")
            }
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List an app's endpoints (never their secrets).")
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            printJSON(try await store.webhookEndpoints(appID: app).map(WebhookEndpoints.view))
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Delete an endpoint and the events it had not received.")
        @OptionGroup var options: StoreOptions
        @Option(help: "The app id.") var app: Int64
        @Argument(help: "The endpoint id.") var id: Int64

        func run() async throws {
            let config = try options.load()
            let store = try options.openStore(config)
            defer { try? store.close() }
            let masterKey = try MasterKey.load(config.security, logger: makeLogger("tuisong", level: "warning"))
            let webhooks = WebhookEndpoints(
                store: store, box: masterKey.box, allowPrivateNetworks: config.webhooks.allowPrivateNetworks)
            do {
                try await webhooks.delete(id, appID: app)
            } catch let error as WebhookError {
                throw CommandFailure(error.message)
            }
            print("removed webhook endpoint \(id)")
        }
    }
}
