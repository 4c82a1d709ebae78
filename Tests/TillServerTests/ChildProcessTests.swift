import Foundation
import Testing
import TillChildProcess
#if canImport(Glibc)
import Glibc
#endif

/// The process starter the server and interop tests use in place of Foundation's `Process`.
@Suite("Child processes")
struct ChildProcessTests {
    let shell = URL(fileURLWithPath: "/bin/sh")

    @Test("the exit status, the output pipe and the environment reach the parent")
    func exitStatusAndOutput() throws {
        let child = try ChildProcess(shell, arguments: ["-c", #"printf '%s' "$TILL_CHILD_WORD"; exit 7"#],
                                     environment: ["TILL_CHILD_WORD": "hello"], stdout: .pipe)
        let output = child.standardOutput!.readDataToEndOfFile()
        #expect(String(decoding: output, as: UTF8.self) == "hello")
        #expect(child.waitUntilExit() == .exited(7))
        #expect(!child.isRunning)
    }

    @Test("a signal ends it and is reported as the signal")
    func killed() async throws {
        let child = try ChildProcess(shell, arguments: ["-c", "sleep 30"], environment: [:])
        #expect(child.isRunning)
        child.terminate()
        #expect(await child.exit() == .signalled(SIGTERM))
    }

    @Test("the child inherits no descriptor but its three streams")
    func nothingInherited() throws {
        // A descriptor of this process without close-on-exec, which a plain fork and exec would hand down.
        let leaked = open("/dev/null", O_RDONLY)
        try #require(leaked > 3)
        defer { close(leaked) }
        let listing = FileManager.default.temporaryDirectory.appendingPathComponent("till-child-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: listing) }
        // The shell lists its own descriptors (/dev/fd on Linux and macOS): 0-2, and 3, the directory its glob reads.
        let child = try ChildProcess(shell, arguments: ["-c", "cd /dev/fd && echo *"], environment: [:],
                                     stdout: .file(listing))
        #expect(child.waitUntilExit() == .exited(0))
        let open = try String(contentsOf: listing, encoding: .utf8).split(whereSeparator: \.isWhitespace).compactMap { Int32($0) }
        #expect(!open.contains(leaked), "\(open)")
        #expect(open == [0, 1, 2, 3], "\(open)")
    }

    @Test("standard input from a pipe: closing it ends the child's input")
    func inputPipe() throws {
        let child = try ChildProcess(shell, arguments: ["-c", "cat"], environment: [:], stdin: .pipe, stdout: .pipe)
        try child.standardInput!.write(contentsOf: Data("through".utf8))
        try child.standardInput!.close()
        #expect(String(decoding: child.standardOutput!.readDataToEndOfFile(), as: UTF8.self) == "through")
        #expect(child.waitUntilExit() == .exited(0))
    }

    @Test("a missing executable is an error, not a child")
    func missing() {
        #expect(throws: ChildProcessError.self) {
            _ = try ChildProcess(URL(fileURLWithPath: "/nonexistent/till-child"), arguments: [], environment: [:])
        }
    }
}
