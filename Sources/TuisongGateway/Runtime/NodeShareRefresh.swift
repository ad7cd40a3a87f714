import Foundation
import Logging
import TuisongCore
import TuisongPlugin

extension NodeShare {
    /// How often a node recounts the live nodes sharing the gateway's limits.
    static let refreshInterval: Duration = .seconds(5)

    /// Keeps the share at `1 / live nodes` (`WorkQueue.liveNodeCount()`, from the heartbeat
    /// table; 1 on SQLite), recounted every `interval` on `clock` until the task is cancelled. While the
    /// count cannot be read the last one stays (a failure is logged once, until it recovers).
    func refreshing(
        from queue: any WorkQueue, every interval: Duration = NodeShare.refreshInterval, clock: any Clock,
        logger: Logger
    ) -> Task<Void, Never> {
        Task.detached(priority: .utility) { [self] in
            var failing = false
            while !Task.isCancelled {
                do {
                    let count = try await queue.liveNodeCount()
                    if count != liveNodes {
                        logger.info(
                            "live nodes changed: each takes its share of the rate limits",
                            metadata: ["nodes": "\(count)"])
                    }
                    update(liveNodes: count)
                    failing = false
                } catch is CancellationError {
                    return
                } catch {
                    if !failing {
                        logger.warning(
                            "cannot count the live nodes; rate limit shares stay as they are",
                            metadata: ["nodes": "\(liveNodes)", "error": "\(error)"])
                    }
                    failing = true
                }
                try? await clock.sleep(for: interval)
            }
        }
    }
}
