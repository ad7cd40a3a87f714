import Foundation
import Glibc
import Synchronization

/// The Python 3 the tests run their independent implementations with (Baidu's and Tencent's
/// signatures, JPush's SDK, a webhook verifier, a lock holder): `python3` as the PATH finds it,
/// resolved once per process to the interpreter itself. Started by name through a version
/// manager's shim (pyenv's is a shell script that starts a dozen more), each of the suite's
/// few hundred starts cost ~0.1 s of CPU before Python ran (issue #46).
public enum Python3 {
    /// The interpreter's path (`sys.executable`); `/usr/bin/env` when it cannot be asked, with
    /// `python3` then the first of `arguments(_:)`.
    public static var executable: URL { URL(fileURLWithPath: resolved ?? "/usr/bin/env") }

    /// `arguments` as `executable` takes them.
    public static func arguments(_ arguments: [String]) -> [String] {
        resolved == nil ? ["python3"] + arguments : arguments
    }

    // popen, not Foundation's Process: its waitUntilExit never returned inside a swift_once on
    // a cooperative thread (TestCluster).
    private static let resolved: String? = {
        guard let pipe = popen("python3 -c 'import sys; print(sys.executable)' </dev/null 2>/dev/null", "r") else {
            return nil
        }
        var output: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = fread(&buffer, 1, buffer.count, pipe)
            if count <= 0 { break }
            output += buffer[..<count]
        }
        let path = String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard pclose(pipe) == 0, path.hasPrefix("/"), FileManager.default.isExecutableFile(atPath: path) else {
            return nil
        }
        return path
    }()
}

extension Python3 {
    /// What one script printed and how it ended.
    public struct Run: Sendable {
        public var status: Int32
        public var output: [UInt8]
        public var errors: String
    }

    /// Runs `script` as `python3 -c script arguments…` would, with `input` on its standard input,
    /// inside one Python process kept for the whole test process: the suite's independent
    /// implementations (Baidu's and Tencent's signatures, UserSig, webhook verification) are
    /// called a few hundred times, and a start of Python with its imports costs more CPU than the
    /// script. Each script runs in fresh globals with its own argv, stdin, stdout and stderr;
    /// `sys.exit` ends the script, not the process. Calls are taken one at a time.
    public static func run(_ script: String, _ arguments: [String] = [], input: [UInt8] = []) throws -> Run {
        try PythonCoprocess.shared.run(script, arguments, input: input)
    }
}

public struct PythonCoprocessError: Error, CustomStringConvertible {
    public var description: String
    public init(description: String) { self.description = description }
}

/// One long-lived `python3` speaking a framed request/answer protocol on its standard streams.
final class PythonCoprocess: Sendable {
    static let shared = PythonCoprocess()

    /// Reads `<length>\n<json>` requests, runs each, answers the same way.
    ///
    /// It first closes every descriptor it inherited but its standard streams: it lives as long
    /// as the test process, and a descriptor another thread had open without close-on-exec when
    /// it was spawned — the socket by which Foundation's `Process` learns that a child it started
    /// at that moment has exited — kept open here would make that child's `waitUntilExit` wait
    /// forever (seen: a `tuisong serve` left a zombie and the suite hung).
    static let driver = #"""
        import os
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        import sys, io, json, base64, traceback
        requests, answers = sys.stdin.buffer, sys.stdout.buffer
        while True:
            header = requests.readline()
            if not header:
                break
            request = json.loads(requests.read(int(header)))
            out, err = io.BytesIO(), io.BytesIO()
            sys.stdin = io.TextIOWrapper(io.BytesIO(base64.b64decode(request["stdin"])), encoding="utf-8")
            sys.stdout = io.TextIOWrapper(out, encoding="utf-8", write_through=True)
            sys.stderr = io.TextIOWrapper(err, encoding="utf-8", write_through=True)
            sys.argv = ["-c"] + request["argv"]
            status = 0
            try:
                exec(compile(request["script"], "<script>", "exec"), {"__name__": "__main__"})
            except SystemExit as end:
                if end.code is None:
                    status = 0
                elif isinstance(end.code, int):
                    status = end.code
                else:
                    print(end.code, file=sys.stderr)
                    status = 1
            except BaseException:
                traceback.print_exc()
                status = 1
            sys.stdout.flush()
            sys.stderr.flush()
            answer = json.dumps({"status": status, "stdout": base64.b64encode(out.getvalue()).decode(),
                                 "stderr": err.getvalue().decode("utf-8", "replace")}).encode()
            answers.write(b"%d\n" % len(answer))
            answers.write(answer)
            answers.flush()
        """#

    private struct Process {
        var pid: pid_t
        var socket: Int32
    }
    private let process = Mutex<Process?>(nil)

    deinit {
        process.withLock { process in
            if let running = process { Self.stop(running) }
        }
    }

    func run(_ script: String, _ arguments: [String], input: [UInt8]) throws -> Python3.Run {
        let request = try JSONSerialization.data(withJSONObject: [
            "script": script, "argv": arguments, "stdin": Data(input).base64EncodedString(),
        ])
        return try process.withLock { process in
            if process == nil { process = try Self.start() }
            do {
                return try Self.exchange(request, with: process!)
            } catch {
                // A dead or confused interpreter is not reused: the next call starts another.
                Self.stop(process!)
                process = nil
                throw error
            }
        }
    }

    private static func start() throws -> Process {
        signal(SIGPIPE, SIG_IGN)
        // One socket pair, Python's standard input and output both on its end; close-on-exec
        // from the start, so a child another thread spawns meanwhile does not inherit it (it
        // would hold Python's standard input open).
        var ends: [Int32] = [0, 0]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &ends) == 0 else {
            throw PythonCoprocessError(description: "socketpair: \(String(cString: strerror(errno)))")
        }
        let (ours, theirs) = (ends[0], ends[1])
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, theirs, 0)
        posix_spawn_file_actions_adddup2(&actions, theirs, 1)
        let arguments = [Python3.executable.path] + Python3.arguments(["-c", driver])
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, Python3.executable.path, &actions, nil, &argv, environ)
        close(theirs)
        guard spawned == 0 else {
            close(ours)
            throw PythonCoprocessError(description: "posix_spawn python3: \(String(cString: strerror(spawned)))")
        }
        return Process(pid: pid, socket: ours)
    }

    private static func stop(_ process: Process) {
        close(process.socket)
        kill(process.pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(process.pid, &status, 0)
    }

    private static func exchange(_ request: Data, with process: Process) throws -> Python3.Run {
        try write(Array("\(request.count)\n".utf8) + Array(request), to: process.socket)
        var header: [UInt8] = []
        while true {
            let byte = try read(1, from: process.socket)
            if byte == [UInt8(ascii: "\n")] { break }
            header += byte
        }
        guard let length = Int(String(decoding: header, as: UTF8.self)) else {
            throw PythonCoprocessError(description: "python3 answered no length: \(header)")
        }
        let body = try read(length, from: process.socket)
        guard let answer = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let status = answer["status"] as? Int, let output = answer["stdout"] as? String,
            let decoded = Data(base64Encoded: output)
        else { throw PythonCoprocessError(description: "python3 answered something else") }
        return Python3.Run(status: Int32(status), output: Array(decoded), errors: answer["stderr"] as? String ?? "")
    }

    private static func write(_ bytes: [UInt8], to fd: Int32) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written < 0 {
                if errno == EINTR { continue }
                throw PythonCoprocessError(description: "writing to python3: \(String(cString: strerror(errno)))")
            }
            offset += written
        }
    }

    private static func read(_ count: Int, from fd: Int32) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var offset = 0
        while offset < count {
            let got = bytes[offset...].withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if got < 0 {
                if errno == EINTR { continue }
                throw PythonCoprocessError(description: "reading from python3: \(String(cString: strerror(errno)))")
            }
            if got == 0 { throw PythonCoprocessError(description: "python3 ended") }
            offset += got
        }
        return bytes
    }
}
