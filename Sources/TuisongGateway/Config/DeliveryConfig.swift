import Foundation
import TuisongCore
import TuisongDelivery
import TuisongHTTP
import TuisongTransportKit

extension DeliverySettings {
    /// `delivery.*` of the config, and the lease timing of `cluster.lease_seconds`; the rest
    /// keeps the engine's defaults.
    init(_ config: GatewayConfig.Delivery, cluster: GatewayConfig.Cluster) {
        self.init(
            workers: config.workers, pageSize: config.pageSize, maxAttempts: config.maxAttempts,
            retryBase: config.retryBaseSeconds, retryMax: config.retryMaxSeconds)
        // Renewed every third of a lease, so two renewals may fail before it ends; sends stop a
        // sixth of a lease before an unrenewed lease ends, so what is in flight lands first.
        let lease = Duration.seconds(cluster.leaseSeconds)
        leaseRenewInterval = lease / 3
        leaseMargin = lease / 6
        maxBacklogPerApp = config.maxBacklogPerApp
    }
}

extension HTTPServer.Configuration {
    /// The main listener, `listen.*` and `http.*` of the config (threads 0 = one per core).
    init(_ listen: GatewayConfig.Listen, http: GatewayConfig.HTTP) {
        self.init(
            host: listen.host, port: listen.port,
            threads: listen.threads == 0 ? ProcessInfo.processInfo.activeProcessorCount : listen.threads,
            connectionTimeout: Double(listen.connectionTimeoutSeconds),
            requestTimeout: Double(listen.requestTimeoutSeconds), maxHeaderBytes: listen.maxHeaderBytes,
            receiveTimeout: Double(listen.receiveTimeoutSeconds), maxConnections: listen.maxConnections,
            maxConnectionsPerAddress: listen.maxConnectionsPerAddress,
            chunkedRequests: ChunkedRequests(rawValue: http.chunkedRequests) ?? .refuse)
    }
}
