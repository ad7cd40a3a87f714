import Foundation
import Logging
import Synchronization
import TuisongCore

/// Deletes, in the background, the badge grants of messages that finished sending
/// (`AccountStore.grantBadges` keeps one per counted account while a message may still be
/// decided). At most one clean-up runs at a time, and requests while it runs are folded into
/// one more run after it, which then sees every message that finished meanwhile: a chat load
/// finishing a thousand messages a second starts a few clean-ups, not a chain of a thousand
/// tasks each waiting for the one before. That one more run starts `pause` after the last
/// ended: under a steady chat load clean-ups otherwise ran back to back — a read and a write
/// transaction each, on SQLite's one writer — ~3 % of the gateway's CPU (perf, Tencent chat
/// load), to delete grants a second sooner that nothing reads once their message is done.
///
/// A clean-up forgets the grants of the messages that finished since the last (by id, a key
/// lookup each). The walk over every message with grants, which steps past each message still
/// sending (a chat backlog's thousands, each walk), is for what a crash left (`start`) and, at
/// most every `walkEvery`, for messages that finished elsewhere than in a run of this node (the
/// retry worker finishing a message's last retry, a run stopped mid-way on another node).
final class BadgeGrantJanitor: Sendable {
    /// What a clean-up forgets.
    enum Scope: Equatable {
        /// The grants of every message not sending (walked).
        case everyMessage
        /// The grants of these messages, if they are not sending.
        case messages([Int64])
    }

    private struct State {
        /// A walk over every message is due.
        var walk = false
        /// Messages finished since the last clean-up took its list.
        var finished: [Int64] = []
        /// When the last walk began.
        var lastWalk: Date?
        var running: Task<Void, Never>?

        /// Past `limit` listed messages (clean-ups failing for long under a chat load), the
        /// list goes and the next clean-up walks, which finds them all.
        mutating func walkInsteadOfAFullList(limit: Int) {
            guard finished.count > limit else { return }
            finished = []
            walk = true
        }
        /// A message finished while a clean-up ran: run once more after it.
        var again = false
        /// The wait before that run; `finished()` ends it.
        var pausing: Task<Void, Error>?
        var finishing = false
    }

    /// The store's `forgetFinishedBadgeGrants` or `forgetBadgeGrants(ofMessages:)`: the rows
    /// deleted.
    private let forget: @Sendable (Scope) async throws -> Int
    private let logger: Logger
    private let clock: any Clock
    private let pause: Duration
    private let walkEvery: Duration
    private let state = Mutex(State())
    /// Messages listed at most for the next clean-up (`State.walkInsteadOfAFullList`).
    static let finishedLimit = 100_000

    init(
        logger: Logger, clock: any Clock, pause: Duration = .seconds(1), walkEvery: Duration = .seconds(600),
        forget: @escaping @Sendable (Scope) async throws -> Int
    ) {
        self.walkEvery = walkEvery
        self.forget = forget
        self.logger = logger
        self.clock = clock
        self.pause = pause
    }

    /// Starts a clean-up unless one runs (then one more follows it); nothing once `stopping` holds.
    /// `message` finished (nil: every message not sending, walked).
    func forgetFinished(_ message: Int64?, unlessStopping stopping: @escaping @Sendable () -> Bool) {
        state.withLock { state in
            if let message { state.finished.append(message) } else { state.walk = true }
            state.walkInsteadOfAFullList(limit: Self.finishedLimit)
            guard state.running == nil else {
                state.again = true
                return
            }
            state.finishing = false
            state.running = Task { await self.run(unlessStopping: stopping) }
        }
    }

    private func run(unlessStopping stopping: @escaping @Sendable () -> Bool) async {
        while !stopping() {
            let now = clock.now
            let walkEvery = walkEvery
            let scope = state.withLock { state -> Scope? in
                defer {
                    state.walk = false
                    state.finished = []
                }
                if state.walk || state.lastWalk.map({ now.timeIntervalSince($0) >= walkEvery.timeInterval }) ?? false {
                    state.lastWalk = now
                    return .everyMessage
                }
                return state.finished.isEmpty ? nil : .messages(state.finished)
            }
            do {
                var forgotten = 0
                if let scope { forgotten = try await forget(scope) }
                if forgotten > 0 {
                    logger.debug("forgot badge grants of finished messages", metadata: ["grants": "\(forgotten)"])
                }
            } catch {
                logger.warning(
                    "forgetting the badge grants of finished messages failed", metadata: ["error": "\(error)"])
                // Tried again with the next clean-up (the next message that finishes, or the
                // next start's walk).
                state.withLock { state in
                    switch scope {
                    case .everyMessage: state.walk = true
                    case .messages(let messages): state.finished = messages + state.finished
                    case nil: break
                    }
                    state.walkInsteadOfAFullList(limit: Self.finishedLimit)
                }
            }
            let again = state.withLock { state -> Bool in
                if state.again {
                    state.again = false
                    return true
                }
                state.running = nil
                return false
            }
            if !again { return }
            let clock = clock
            let pause = pause
            let pausing: Task<Void, Error>? = state.withLock { state in
                guard !state.finishing else { return nil }
                let task = Task { try await clock.sleep(for: pause) }
                state.pausing = task
                return task
            }
            guard let pausing else { break }
            _ = try? await pausing.value
            if state.withLock({ state in
                state.pausing = nil
                return state.finishing
            }) {
                break
            }
        }
        state.withLock { $0.running = nil }
    }

    /// Returns once the clean-up running now (if any) has ended; a pause before one more run
    /// ends at once (the engine is stopping: the next start cleans up what is left).
    func finished() async {
        let running = state.withLock { state in
            state.finishing = true
            state.pausing?.cancel()
            return state.running
        }
        await running?.value
    }
}
