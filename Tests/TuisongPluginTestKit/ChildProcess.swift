import Foundation
import Glibc
import Synchronization

/// A child process for the tests, started with `posix_spawn`: the part of Foundation's `Process`
/// the suites use (same names), without what made it unfit for them on Linux.
///
/// - Every `Process.run()` of swift-corelibs-foundation (Swift 6.3.1) copies a whole 256-byte
///   `d_name` from each `readdir` record of `/proc/self/fd` (`findMaximumOpenFromProcSelfFD`),
///   reading past glibc's buffer; when that buffer ends a page the read faults
///   (swift-corelibs-foundation PR #5472). It killed the test process with SIGSEGV in one
///   `make test-swift` of ten (2026-11-30, `CLIErrorTests` → `TuisongCommand.run`).
/// - A child inherits its spawning thread's signal mask, and Dispatch's threads block SIGTERM:
///   `terminate()` of a child started from one did nothing. Here the child starts with none
///   blocked, whatever thread starts it.
/// - Its `waitUntilExit` spins off the launching thread (see `exited()`). Here one thread per
///   child waits in `waitpid` and the waits sleep on a condition.
/// - Descriptors: the child keeps its three standard streams only (`closefrom(3)` in the
///   child), so a pipe another test has open at that moment is never held by this child.
public final class ChildProcess: @unchecked Sendable {
    /// Why a child ended, as Foundation says it.
    public typealias TerminationReason = Process.TerminationReason

    public var executableURL: URL?
    public var arguments: [String]?
    /// nil: the test process's own.
    public var environment: [String: String]?
    /// nil: the test process's own.
    public var currentDirectoryURL: URL?
    /// A `Pipe` (the child gets its reading end), a `FileHandle`, or nil for /dev/null; left
    /// unset, the test process's own.
    public var standardInput: Any? = FileHandle.standardInput
    /// A `Pipe` (the child gets its writing end), a `FileHandle`, or nil for /dev/null; left
    /// unset, the test process's own.
    public var standardOutput: Any? = FileHandle.standardOutput
    public var standardError: Any? = FileHandle.standardError

    public private(set) var processIdentifier: Int32 = 0

    private struct Exit {
        var status: Int32
        var reason: TerminationReason
    }
    private let exit = Mutex<Exit?>(nil)
    private let exitCondition = NSCondition()

    public init() {}

    public var isRunning: Bool { processIdentifier != 0 && exit.withLock { $0 == nil } }

    /// Valid once the child has exited (`isRunning` false).
    public var terminationStatus: Int32 { exit.withLock { $0?.status ?? 0 } }
    public var terminationReason: TerminationReason { exit.withLock { $0?.reason ?? .exit } }

    /// Sends SIGTERM (nothing once the child has exited).
    public func terminate() { signal(SIGTERM) }
    /// Sends SIGINT (nothing once the child has exited).
    public func interrupt() { signal(SIGINT) }

    private func signal(_ number: Int32) {
        precondition(processIdentifier != 0, "the child was not started")
        // Checked under the lock the reaper sets the exit with: a reaped child's pid may be
        // another process's already.
        exit.withLock { if $0 == nil { _ = kill(processIdentifier, number) } }
    }

    /// Blocks the calling thread until the child has exited.
    public func waitUntilExit() {
        exitCondition.lock()
        defer { exitCondition.unlock() }
        while isRunning { exitCondition.wait() }
    }

    /// Suspends until the child has exited, without holding a cooperative thread.
    public func exited() async {
        while isRunning { try? await Task.sleep(for: .milliseconds(2)) }
    }

    public func run() throws {
        precondition(processIdentifier == 0, "a child is started once")
        guard let executable = executableURL?.path else {
            throw ChildProcessError("no executableURL")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }

        // Parent-side ends to close once the child has its copies.
        var closeAfterSpawn: [FileHandle] = []
        var nullDevice: FileHandle?
        func stream(_ value: Any?, _ target: Int32, inherited: FileHandle) throws {
            let fd: Int32
            switch value {
            case let handle as FileHandle where handle === inherited:
                return
            case let pipe as Pipe:
                let childEnd = target == STDIN_FILENO ? pipe.fileHandleForReading : pipe.fileHandleForWriting
                fd = childEnd.fileDescriptor
                closeAfterSpawn.append(childEnd)
            case let handle as FileHandle:
                fd = handle.fileDescriptor
            case nil:
                if nullDevice == nil { nullDevice = FileHandle(forUpdatingAtPath: "/dev/null") }
                guard let null = nullDevice else { throw ChildProcessError("cannot open /dev/null") }
                fd = null.fileDescriptor
            default:
                throw ChildProcessError("a standard stream is a Pipe, a FileHandle or nil, not \(type(of: value))")
            }
            posix_spawn_file_actions_adddup2(&actions, fd, target)
        }
        try stream(standardInput, STDIN_FILENO, inherited: .standardInput)
        try stream(standardOutput, STDOUT_FILENO, inherited: .standardOutput)
        try stream(standardError, STDERR_FILENO, inherited: .standardError)
        let closing = Self.closeFrom(&actions, 3)
        guard closing == 0 else {
            throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np: \(String(cString: strerror(closing)))")
        }
        if let directory = currentDirectoryURL?.path {
            let failed = directory.withCString { Self.changeDirectory(&actions, $0) }
            guard failed == 0 else {
                throw ChildProcessError("addchdir \(directory): \(String(cString: strerror(failed)))")
            }
        }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        // SIGPIPE ignored here (the suites write to children that may have gone) is not the
        // child's business: it starts with the default action, as from a shell.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))

        let argumentList = [executable] + (arguments ?? [])
        var argv: [UnsafeMutablePointer<CChar>?] = argumentList.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned: Int32
        if let environment {
            var envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
            defer { for pointer in envp { free(pointer) } }
            spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, &envp)
        } else {
            spawned = posix_spawn(&pid, executable, &actions, &attributes, &argv, environ)
        }
        for handle in closeAfterSpawn { try? handle.close() }
        try? nullDevice?.close()
        guard spawned == 0 else {
            throw ChildProcessError("posix_spawn \(executable): \(String(cString: strerror(spawned)))")
        }
        processIdentifier = pid
        let child = pid
        let reaper = Thread { [self] in reap(child) }
        reaper.name = "reap \(child)"
        reaper.start()
    }

    private func reap(_ pid: pid_t) {
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import (macros).
        let signalled = (status & 0x7f) != 0 && (status & 0x7f) != 0x7f
        let ended =
            signalled
            ? Exit(status: status & 0x7f, reason: .uncaughtSignal) : Exit(status: (status >> 8) & 0xff, reason: .exit)
        exitCondition.lock()
        exit.withLock { $0 = ended }
        exitCondition.broadcast()
        exitCondition.unlock()
    }

    // glibc's `_np` spawn actions (2.29, 2.34) are declared only under _GNU_SOURCE, which Swift's
    // Glibc module is not built with: looked up by name.
    private typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private typealias ChangeDirectory =
        @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32

    private static let closeFrom: CloseFrom = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np")
        else {
            fatalError("glibc without posix_spawn_file_actions_addclosefrom_np (2.34+)")
        }
        return unsafeBitCast(symbol, to: CloseFrom.self)
    }()

    private static let changeDirectory: ChangeDirectory = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np") else {
            fatalError("glibc without posix_spawn_file_actions_addchdir_np (2.29+)")
        }
        return unsafeBitCast(symbol, to: ChangeDirectory.self)
    }()
}

public struct ChildProcessError: Error, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}
