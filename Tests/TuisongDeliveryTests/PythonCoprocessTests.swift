import Foundation
import Testing

@testable import TuisongPluginTestKit

/// The one Python the tests' independent implementations run in (`Python3.run`).
@Suite struct PythonCoprocessTests {
    @Test func eachScriptHasItsOwnArgumentsInputOutputAndEnd() throws {
        let first = try Python3.run(
            "import sys\nleft = 1\nsys.stdout.write(sys.argv[1] + sys.stdin.read())\nsys.exit(3)", ["a"],
            input: Array("b".utf8))
        #expect(first.status == 3)
        #expect(String(decoding: first.output, as: UTF8.self) == "ab")
        let second = try Python3.run("import sys\nprint('left' in globals(), len(sys.argv))")
        #expect(second.status == 0)
        #expect(String(decoding: second.output, as: UTF8.self) == "False 1\n", "no globals or arguments carried over")
        let failed = try Python3.run("raise ValueError('no')")
        #expect(failed.status == 1)
        #expect(failed.errors.contains("ValueError: no"))
    }

    /// A descriptor the test process has open without close-on-exec when Python is spawned (the
    /// socket by which Foundation's `Process` learns that a child exited, opened by another
    /// thread at that moment) is closed in Python: kept, that child's `waitUntilExit` never
    /// returned and the suite hung.
    @Test func pythonKeepsNoDescriptorOfTheTestProcess() throws {
        let path = FileManager.default.temporaryDirectory.appending(path: "python-fd-\(UUID().uuidString)").path
        let fd = open(path, O_CREAT | O_RDWR, 0o600)
        #expect(fd >= 0)
        defer {
            close(fd)
            unlink(path)
        }
        let python = PythonCoprocess()
        // The listing's own descriptor is gone by the time its link is read: skipped.
        let script = """
            import os
            for f in os.listdir('/proc/self/fd'):
                try:
                    print(os.readlink('/proc/self/fd/' + f))
                except OSError:
                    pass
            """
        let run = try python.run(script, [], input: [])
        #expect(run.status == 0, "\(run.errors)")
        let open = String(decoding: run.output, as: UTF8.self).split(separator: "\n").map(String.init)
        #expect(open.count == 3, "only the standard streams: \(open)")
        #expect(!open.contains(path), "\(open)")
    }
}
