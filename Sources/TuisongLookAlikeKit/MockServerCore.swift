import Logging
import Synchronization
internal import TuisongCrypto

/// The faults in force, with the token-prefix table precompiled.
struct ActiveFaults: Sendable {
    let faults: APNsMockConfiguration.Faults
    let prefixes: TokenPrefixFaults
    let androidPrefixes: AndroidTokenPrefixFaults

    init(_ faults: APNsMockConfiguration.Faults) {
        self.faults = faults
        prefixes = TokenPrefixFaults(faults.tokenPrefixes)
        androidPrefixes = AndroidTokenPrefixFaults(faults.androidTokenPrefixes)
    }
}

/// Holds the current faults; event loops re-read them only when the generation changed, so a
/// request costs one atomic load instead of a lock.
final class FaultBoard: Sendable {
    private let current: Mutex<ActiveFaults>
    private let generationCounter = Atomic<Int>(0)

    init(_ faults: APNsMockConfiguration.Faults) {
        current = Mutex(ActiveFaults(faults))
    }

    var generation: Int { generationCounter.load(ordering: .acquiring) }

    var faults: APNsMockConfiguration.Faults { current.withLock { $0.faults } }

    func snapshot() -> (generation: Int, faults: ActiveFaults) {
        // Generation first: a replace racing with this read makes the next request re-read.
        let generation = self.generation
        return (generation, current.withLock { $0 })
    }

    func replace(_ faults: APNsMockConfiguration.Faults) {
        let compiled = ActiveFaults(faults)
        current.withLock { $0 = compiled }
        generationCounter.add(1, ordering: .releasing)
    }
}

/// Everything the event loops share. Immutable apart from its Sendable members.
final class MockServerCore: Sendable {
    let configuration: APNsMockConfiguration
    let tlsContext: TLSContext
    let recorder: MockRecorder
    let validator: APNsRequestValidator
    let faultBoard: FaultBoard
    /// What the look-alikes on the port share, and the look-alikes (each service's, by path).
    let host: LookAlikeHost
    let lookAlikes: LookAlikeSet
    let requestLog: (@Sendable (String) -> Void)?
    let logger: Logger
    private let connectionIDs = Atomic<UInt64>(0)

    init(
        configuration: APNsMockConfiguration, lookAlikes registry: LookAlikeRegistry, tlsContext: TLSContext,
        verifier: any ProviderTokenVerifying, requestLog: (@Sendable (String) -> Void)?, logger: Logger
    ) throws {
        self.configuration = configuration
        self.tlsContext = tlsContext
        recorder = MockRecorder(capacity: configuration.recordedNotificationLimit)
        validator = APNsRequestValidator(
            maxTokenAgeSeconds: Int64(configuration.maxTokenAgeSeconds), verifier: verifier)
        faultBoard = FaultBoard(configuration.faults)
        host = LookAlikeHost(configuration: configuration)
        lookAlikes = try LookAlikeSet(registry, host: host, configuration: configuration)
        self.requestLog = requestLog
        self.logger = logger
    }

    /// Server-wide connection numbers, from 1.
    func nextConnectionID() -> UInt64 {
        connectionIDs.add(1, ordering: .relaxed).newValue
    }
}
