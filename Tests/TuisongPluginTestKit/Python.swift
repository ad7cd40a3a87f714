import Foundation

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
