import Foundation
import Synchronization
import Testing
import TuisongPluginTestKit

/// The suites' waits for a child process (`ProcessExit.swift`): they end when the child has
/// exited, with its status readable, and sleep rather than spin while it runs.
@Suite struct ProcessExitTests {
    /// Started on a thread of its own, as the suites' children often are (started in one task,
    /// waited for in another): Foundation's `waitUntilExit` spins only off the launching thread.
    static func child(_ executable: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let launched = Mutex<(any Error)?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do { try process.run() } catch { launched.withLock { $0 = error } }
            done.signal()
        }.start()
        done.wait()
        if let error = launched.withLock({ $0 }) { throw error }
        return process
    }

    /// CPU time this thread has used, in seconds.
    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }

    @Test func aBlockingWaitEndsWithTheStatusReadableAndDoesNotSpin() throws {
        let process = try Self.child("/bin/sh", ["-c", "sleep 0.4; exit 7"])
        let before = Self.threadCPUSeconds()
        process.blockUntilExit()
        let spent = Self.threadCPUSeconds() - before
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 7)
        // Foundation's `waitUntilExit` spins here for the whole 0.4 s (0.2–0.4 s of CPU, checked); a poll
        // that sleeps 1 ms between looks uses a few milliseconds.
        #expect(spent < 0.1, "the wait used \(spent) s of CPU")
    }

    @Test func anAsyncWaitEndsWhenTheChildIsKilled() async throws {
        let process = try Self.child("/bin/sleep", ["30"])
        kill(process.processIdentifier, SIGKILL)
        await process.exited()
        #expect(!process.isRunning)
        #expect(process.terminationReason == .uncaughtSignal)
    }
}
