import Foundation
import Synchronization
import Testing
import TuisongPluginTestKit

/// The suites' child processes (`ChildProcess`, instead of Foundation's `Process`): started with
/// `posix_spawn`, waited for without spinning, stoppable whatever thread started them, holding no
/// descriptor of the test process but their standard streams.
@Suite struct ChildProcessTests {
    /// Started on a thread of its own, as the suites' children often are (started in one task,
    /// waited for in another).
    static func child(
        _ executable: String, _ arguments: [String], configure: (ChildProcess) -> Void = { _ in }
    ) throws -> ChildProcess {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        configure(process)
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
        #expect(process.isRunning)
        let before = Self.threadCPUSeconds()
        process.waitUntilExit()
        let spent = Self.threadCPUSeconds() - before
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 7)
        #expect(process.terminationReason == .exit)
        // Foundation's `waitUntilExit` spun here for the whole 0.4 s (0.2–0.4 s of CPU, checked);
        // this one sleeps on a condition.
        #expect(spent < 0.1, "the wait used \(spent) s of CPU")
    }

    @Test func anAsyncWaitEndsWhenTheChildIsKilled() async throws {
        let process = try Self.child("/bin/sleep", ["30"])
        kill(process.processIdentifier, SIGKILL)
        await process.exited()
        #expect(!process.isRunning)
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGKILL)
    }

    /// Dispatch's threads block SIGTERM, and a child inherits its spawner's mask: started from
    /// one by Foundation's `Process`, `terminate()` did nothing.
    @Test func terminateStopsAChildStartedFromADispatchThread() async throws {
        let started = Mutex<Result<ChildProcess, any Error>?>(nil)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                let process = ChildProcess()
                process.executableURL = URL(fileURLWithPath: "/bin/sleep")
                process.arguments = ["30"]
                let outcome = Result<ChildProcess, any Error> {
                    try process.run()
                    return process
                }
                started.withLock { $0 = outcome }
                done.resume()
            }
        }
        let process = try #require(started.withLock { $0 }).get()
        process.terminate()
        await process.exited()
        #expect(process.terminationReason == .uncaughtSignal)
        #expect(process.terminationStatus == SIGTERM)
    }

    @Test func streamsEnvironmentAndDirectoryReachTheChild() throws {
        let input = Pipe()
        let output = Pipe()
        let directory = FileManager.default.temporaryDirectory
        let process = try Self.child("/bin/sh", ["-c", "read line; echo \"$line $GREETING $(pwd)\"; echo oops >&2"]) {
            $0.standardInput = input
            $0.standardOutput = output
            $0.standardError = nil
            $0.environment = ["GREETING": "hello", "PATH": "/usr/bin:/bin"]
            $0.currentDirectoryURL = directory
        }
        input.fileHandleForWriting.write(Data("hi\n".utf8))
        try input.fileHandleForWriting.close()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let resolved = directory.resolvingSymlinksInPath().path
        #expect(printed == "hi hello \(resolved)\n")
        #expect(process.terminationStatus == 0)
    }

    /// A descriptor the test process has open (without close-on-exec, as Foundation's pipes are)
    /// is not the child's: a child holding another test's pipe kept that test's read waiting.
    @Test func theChildHoldsOnlyItsStandardStreams() throws {
        let unrelated = Pipe()
        let output = Pipe()
        let process = try Self.child("/bin/ls", ["/proc/self/fd"]) { $0.standardOutput = output }
        let listed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        // 0–2, and the descriptor `ls` opened to list the directory.
        let descriptors = listed.split(separator: "\n").compactMap { Int($0) }
        #expect(descriptors.filter { $0 > 2 }.count <= 1, "the child had \(descriptors)")
        #expect(!descriptors.contains(Int(unrelated.fileHandleForReading.fileDescriptor)))
        #expect(!descriptors.contains(Int(unrelated.fileHandleForWriting.fileDescriptor)))
    }

    @Test func aMissingExecutableThrows() {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/nonexistent/tuisong")
        #expect(throws: ChildProcessError.self) { try process.run() }
        #expect(!process.isRunning)
    }
}
