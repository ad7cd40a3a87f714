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
    static let driver = #"""
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
        var requests: Int32
        var answers: Int32
    }
    private let process = Mutex<Process?>(nil)

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
        var toChild: [Int32] = [0, 0]
        var fromChild: [Int32] = [0, 0]
        guard pipe(&toChild) == 0, pipe(&fromChild) == 0 else {
            throw PythonCoprocessError(description: "pipe: \(String(cString: strerror(errno)))")
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, toChild[0], 0)
        posix_spawn_file_actions_adddup2(&actions, fromChild[1], 1)
        for fd in [toChild[0], toChild[1], fromChild[0], fromChild[1]] {
            posix_spawn_file_actions_addclose(&actions, fd)
        }
        let arguments = [Python3.executable.path] + Python3.arguments(["-c", driver])
        var argv = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, Python3.executable.path, &actions, nil, &argv, environ)
        close(toChild[0])
        close(fromChild[1])
        guard spawned == 0 else {
            close(toChild[1])
            close(fromChild[0])
            throw PythonCoprocessError(description: "posix_spawn python3: \(String(cString: strerror(spawned)))")
        }
        _ = fcntl(toChild[1], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fromChild[0], F_SETFD, FD_CLOEXEC)
        return Process(pid: pid, requests: toChild[1], answers: fromChild[0])
    }

    private static func stop(_ process: Process) {
        close(process.requests)
        close(process.answers)
        kill(process.pid, SIGKILL)
        var status: Int32 = 0
        _ = waitpid(process.pid, &status, 0)
    }

    private static func exchange(_ request: Data, with process: Process) throws -> Python3.Run {
        try write(Array("\(request.count)\n".utf8) + Array(request), to: process.requests)
        var header: [UInt8] = []
        while true {
            let byte = try read(1, from: process.answers)
            if byte == [UInt8(ascii: "\n")] { break }
            header += byte
        }
        guard let length = Int(String(decoding: header, as: UTF8.self)) else {
            throw PythonCoprocessError(description: "python3 answered no length: \(header)")
        }
        let body = try read(length, from: process.answers)
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
