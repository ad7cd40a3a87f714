import Logging
import Synchronization
internal import TuisongCrypto

/// The faults in force, with what each service made of them (`PortService.prepareFaults`)
/// and the token-prefix table precompiled. A class: each request carries a reference to it,
/// not a copy.
package final class ActiveFaults: Sendable {
    package let faults: LookAlikeConfiguration.Faults
    package let androidPrefixes: AndroidTokenPrefixFaults
    /// Each service's prepared faults, in the services' order.
    let prepared: [(any AnyObject & Sendable)?]

    init(_ faults: LookAlikeConfiguration.Faults, services: [any PortService], logger: Logger) {
        self.faults = faults
        androidPrefixes = AndroidTokenPrefixFaults(faults.androidTokenPrefixes)
        prepared = services.map { service in
            do {
                return try service.prepareFaults(faults)
            } catch {
                // `LookAlikeRegistry.check` refuses such faults before a server starts; faults
                // set later that do not read leave that service without any.
                logger.error(
                    "look-alike server: a look-alike cannot read its faults",
                    metadata: ["service": "\(service.service)", "error": "\(error)"])
                return try? service.prepareFaults(LookAlikeConfiguration.Faults())
            }
        }
    }
}

/// Holds the current faults; event loops re-read them only when the generation changed, so a
/// request costs one atomic load instead of a lock.
final class FaultBoard: Sendable {
    private let current: Mutex<ActiveFaults>
    private let generationCounter = Atomic<Int>(0)
    private let services: [any PortService]
    private let logger: Logger

    init(_ faults: LookAlikeConfiguration.Faults, services: [any PortService], logger: Logger) {
        self.services = services
        self.logger = logger
        current = Mutex(ActiveFaults(faults, services: services, logger: logger))
    }

    var generation: Int { generationCounter.load(ordering: .acquiring) }

    var faults: LookAlikeConfiguration.Faults { current.withLock { $0.faults } }

    func snapshot() -> (generation: Int, faults: ActiveFaults) {
        // Generation first: a replace racing with this read makes the next request re-read.
        let generation = self.generation
        return (generation, current.withLock { $0 })
    }

    func replace(_ faults: LookAlikeConfiguration.Faults) {
        let compiled = ActiveFaults(faults, services: services, logger: logger)
        current.withLock { $0 = compiled }
        generationCounter.add(1, ordering: .releasing)
    }
}

/// Everything the event loops share. Immutable apart from its Sendable members.
final class MockServerCore: Sendable {
    let configuration: LookAlikeConfiguration
    let tlsContext: TLSContext
    let recorder: ServerRecorder
    let faultBoard: FaultBoard
    /// What the look-alikes on the port share, and the look-alikes (each service's, by path).
    let host: LookAlikeHost
    let lookAlikes: LookAlikeSet
    let logger: Logger
    private let connectionIDs = Atomic<UInt64>(0)

    init(
        configuration: LookAlikeConfiguration, lookAlikes registry: LookAlikeRegistry, tlsContext: TLSContext,
        requestLog: (@Sendable (String) -> Void)?, logger: Logger
    ) throws {
        self.configuration = configuration
        self.tlsContext = tlsContext
        recorder = ServerRecorder()
        host = LookAlikeHost(configuration: configuration, requestLog: requestLog, logger: logger)
        lookAlikes = try LookAlikeSet(registry, host: host, configuration: configuration)
        // Faults that do not read are refused here, before anything listens.
        for service in lookAlikes.services { _ = try service.prepareFaults(configuration.faults) }
        faultBoard = FaultBoard(configuration.faults, services: lookAlikes.services, logger: logger)
        self.logger = logger
    }

    /// Server-wide connection numbers, from 1.
    func nextConnectionID() -> UInt64 {
        connectionIDs.add(1, ordering: .relaxed).newValue
    }
}
