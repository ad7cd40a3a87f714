import Foundation
import TuisongDelivery
import TuisongHTTP

extension DeliverySettings {
    /// `delivery.*` of the config; the rest keeps the engine's defaults.
    init(_ config: GatewayConfig.Delivery) {
        self.init(
            workers: config.workers, pageSize: config.pageSize, maxAttempts: config.maxAttempts,
            retryBase: config.retryBaseSeconds, retryMax: config.retryMaxSeconds)
    }
}

extension APNsPoolSettings {
    /// `apns.*` of the config.
    init(_ config: GatewayConfig.APNs) {
        self.init(
            connections: config.connections, connectTimeout: .seconds(config.connectTimeoutSeconds),
            requestTimeout: .seconds(config.requestTimeoutSeconds),
            tokenRefreshInterval: .seconds(config.tokenRefreshMinutes * 60))
    }
}

extension HTTPServer.Configuration {
    /// The main listener, `listen.*` of the config (threads 0 = one per core).
    init(_ listen: GatewayConfig.Listen) {
        self.init(
            host: listen.host, port: listen.port,
            threads: listen.threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : listen.threads,
            connectionTimeout: Double(listen.connectionTimeoutSeconds),
            requestTimeout: Double(listen.requestTimeoutSeconds), maxHeaderBytes: listen.maxHeaderBytes,
            receiveTimeout: Double(listen.receiveTimeoutSeconds), maxConnections: listen.maxConnections,
            maxConnectionsPerAddress: listen.maxConnectionsPerAddress)
    }
}
