import Foundation

// Waiting for a child process without spinning a core.
//
// Foundation's `waitUntilExit` (swift-corelibs-foundation) loops `while isRunning {
// RunLoop.current.run(until: now + 50 ms) }`. Off the thread that launched the process, that
// run loop has no input source, so each `run(until:)` returns at once and the wait spins: 4.7 %
// of the Swift suite's CPU in a profile (`perf record` over `swift test`), most of it while a
// gateway drained in-flight sends after SIGTERM — on 2 cores, beside the very child it waited
// for, and on one of the cooperative pool's 2 threads. `isRunning` is cleared by Foundation's
// own monitor thread when it reaps the child, so polling it waits for the same moment.

extension Process {
    /// Suspends until the process has exited and Foundation has reaped it (so
    /// `terminationStatus` is readable). Frees its cooperative thread while it waits.
    public func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(2)) }
    }

    /// `waitUntilExit` without the spin, for synchronous code (a `defer`, a synchronous helper):
    /// the thread sleeps between looks.
    public func blockUntilExit() {
        while isRunning { usleep(1_000) }
    }
}
