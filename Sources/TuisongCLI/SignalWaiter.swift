import Dispatch
import Foundation

/// Turns SIGINT/SIGTERM into an awaitable event. The default handlers are replaced at init
/// so a signal arriving during start-up is not lost (it is delivered to the dispatch source).
final class SignalWaiter: @unchecked Sendable {
    // @unchecked: the sources are only stored (to keep them alive), never touched after init,
    // and DispatchSource is thread-safe. The continuation is resumed at most once
    // because `stream` finishes after the first yield.
    private let sources: [any DispatchSourceSignal]
    private let stream: AsyncStream<Int32>

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream<Int32>.makeStream()
        self.stream = stream
        var sources: [any DispatchSourceSignal] = []
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                continuation.yield(number)
                continuation.finish()
            }
            source.resume()
            sources.append(source)
        }
        self.sources = sources
    }

    func wait() async -> Int32 {
        for await number in stream { return number }
        return 0
    }
}
