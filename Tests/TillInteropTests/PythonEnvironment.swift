import Crypto
import Foundation
import TillChildProcess
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The vendors' Python code the interop tests run against: a virtualenv with a pinned requirements
/// file of `Python/` installed (``shared``: `requirements.txt`; ``ipaynow``: `ipaynow-requirements.txt`),
/// made once (per test run and per requirements file) under the package's `.build/interop-venv/`, and a
/// runner for the scripts in `Python/`.
///
/// A virtualenv is reused across runs: it lives in `.build/interop-venv/<SHA-256 of its requirements
/// file>/` and counts as complete only once its marker file exists, which is written last. Another
/// test process making the same virtualenv at the same moment waits on a file lock.
struct PythonEnvironment: Sendable {
    /// The virtualenv's interpreter.
    let python: URL
    /// `Tests/TillInteropTests/Python`.
    let scripts: URL

    /// Where `python3` is on `PATH`, or nil; the interop tests are skipped without it.
    static let systemPython: URL? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("python3")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }()

    /// Whether the interop tests can run (a `python3` is on `PATH`).
    static var available: Bool { systemPython != nil }

    /// This test target's folder, found beside this source file.
    static let targetDirectory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
    /// The package's root folder.
    static let packageDirectory = targetDirectory.deletingLastPathComponent().deletingLastPathComponent()

    /// The one environment of this test run: made (or found) by the first test that asks, shared by
    /// all. A failure (no `python3`, `venv` or pip failing) fails every test that needs it, with the
    /// tool's output.
    static let shared: Task<PythonEnvironment, any Error> = Task { try await prepare() }

    /// iPayNow's Python SDK in a virtualenv of its own, from `Python/ipaynow-requirements.txt`: it pins
    /// `cryptography` below 46, which `requirements.txt`'s jwcrypto does not accept.
    static let ipaynow: Task<PythonEnvironment, any Error> = Task { try await prepare(requirementsFile: "ipaynow-requirements.txt") }

    /// ecommpay's Python SDK (PyPI `ecommpay-sdk` 1.0.6, hash-pinned) in a virtualenv of its own, from
    /// `Python/ecommpay-requirements.txt`.
    static let ecommpay: Task<PythonEnvironment, any Error> = Task { try await prepare(requirementsFile: "ecommpay-requirements.txt") }

    /// Finds or makes the virtualenv of `Python/<requirementsFile>`.
    static func prepare(requirementsFile: String = "requirements.txt") async throws -> PythonEnvironment {
        guard let systemPython else { throw InteropError("python3 not found on PATH") }
        let requirements = targetDirectory.appendingPathComponent("Python/\(requirementsFile)")
        let requirementsData = try Data(contentsOf: requirements)
        let hash = SHA256.hash(data: requirementsData).map { String(format: "%02x", $0) }.joined().prefix(16)
        let root = packageDirectory.appendingPathComponent(".build/interop-venv")
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        let venv = root.appendingPathComponent(String(hash))
        let marker = venv.appendingPathComponent("till-interop-complete")
        let environment = PythonEnvironment(python: venv.appendingPathComponent("bin/python"),
                                            scripts: targetDirectory.appendingPathComponent("Python"))
        if FileManager.default.fileExists(atPath: marker.path) { return environment }

        let lock = try await FileLock.acquire(root.appendingPathComponent("\(hash).lock"), timeout: .seconds(600))
        defer { lock.release() }
        // Another process may have finished it while this one waited for the lock.
        if FileManager.default.fileExists(atPath: marker.path) { return environment }
        // A folder without the marker is a run that was interrupted: start again.
        try? FileManager.default.removeItem(at: venv)

        let made = try await ProcessRunner.run(systemPython, ["-m", "venv", venv.path], timeout: .seconds(120))
        guard made.status == 0 else {
            throw InteropError("python3 -m venv failed (exit \(made.status)):\n\(made.stdoutText)\n\(made.stderrText)")
        }
        let pip = try await ProcessRunner.run(environment.python,
                                              ["-m", "pip", "install", "--disable-pip-version-check", "--no-input",
                                               "-r", requirements.path],
                                              timeout: .seconds(600))
        guard pip.status == 0 else {
            throw InteropError("pip install -r Tests/TillInteropTests/Python/\(requirementsFile) failed (exit \(pip.status)):\n"
                               + "\(pip.stdoutText)\n\(pip.stderrText)")
        }
        try Data(String(hash).utf8).write(to: marker)
        return environment
    }

    /// Runs `Python/<script>` with `arguments` and `input` (JSON on standard input) and decodes its
    /// standard output as `Output`. A non-zero exit, a timeout or an unreadable output throws with the
    /// script's standard error.
    func run<Input: Encodable, Output: Decodable>(_ script: String, _ arguments: [String] = [], input: Input,
                                                  as type: Output.Type, timeout: Duration = .seconds(30)) async throws -> Output {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let result = try await ProcessRunner.run(python, [scripts.appendingPathComponent(script).path] + arguments,
                                                 stdin: try encoder.encode(input), timeout: timeout)
        guard result.status == 0 else {
            throw InteropError("\(script) exited \(result.status):\n\(result.stderrText)\n\(result.stdoutText)")
        }
        do {
            return try JSONDecoder().decode(Output.self, from: result.stdout)
        } catch {
            throw InteropError("\(script) printed no readable answer (\(error)):\n\(result.stdoutText)\n\(result.stderrText)")
        }
    }

    /// Starts `Python/<script>` in the background (a server the test talks to). See ``BackgroundScript``.
    func start(_ script: String, _ arguments: [String] = []) throws -> BackgroundScript {
        try BackgroundScript(python: python, script: scripts.appendingPathComponent(script), arguments: arguments)
    }
}

/// A failure of the interop harness, with the tools' output.
struct InteropError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// A finished process: exit status and what it printed.
struct ProcessResult: Sendable {
    var status: Int32
    var stdout: Data
    var stderr: Data
    var stdoutText: String { String(decoding: stdout, as: UTF8.self) }
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// Runs a process to completion with a time limit. Output goes to temporary files (no pipe can fill
/// up and stall the child); standard input comes from a temporary file.
enum ProcessRunner {
    static func run(_ executable: URL, _ arguments: [String], stdin: Data = Data(),
                    timeout: Duration) async throws -> ProcessResult {
        let files = try TemporaryFiles(count: 3)
        defer { files.remove() }
        try stdin.write(to: files.urls[0])
        let child = try ChildProcess(executable, arguments: arguments, environment: PythonEnvironment.childEnvironment,
                                     stdin: .file(files.urls[0]), stdout: .file(files.urls[1]), stderr: .file(files.urls[2]))
        let status = try await ProcessWaiter(child).run(timeout: timeout, name: executable.lastPathComponent)
        return ProcessResult(status: status, stdout: (try? Data(contentsOf: files.urls[1])) ?? Data(),
                             stderr: (try? Data(contentsOf: files.urls[2])) ?? Data())
    }
}

extension PythonEnvironment {
    /// This process's environment, with Python told to write no bytecode and to speak UTF-8.
    static var childEnvironment: [String: String] {
        ChildProcess.inheritedEnvironment(["PYTHONDONTWRITEBYTECODE": "1", "PYTHONIOENCODING": "utf-8"])
    }
}

/// Waits for a started process without blocking a thread, and terminates it when it overruns its time.
struct ProcessWaiter: Sendable {
    private let child: ChildProcess

    init(_ child: ChildProcess) {
        self.child = child
    }

    /// Waits for the process and returns its exit status (128 + the signal when a signal ended it).
    /// - Throws: ``InteropError`` when it had to be terminated after `timeout`.
    func run(timeout: Duration, name: String) async throws -> Int32 {
        let child = child
        let watchdog = Task {
            try await Task.sleep(for: timeout)
            // Only a child still running when the time is up has overrun it.
            guard child.isRunning else { return false }
            child.terminate()
            return true
        }
        let ended = await child.exit()
        watchdog.cancel()
        if (try? await watchdog.value) == true {
            throw InteropError("\(name) did not finish within \(timeout) and was terminated (\(ended))")
        }
        switch ended {
        case .exited(let status): return status
        case .signalled(let signal): return 128 + signal
        }
    }

    /// Terminates the process if it still runs.
    func terminate() {
        child.terminate()
    }
}

/// A script left running while a test talks to it (a webhook receiver). Its first line of standard
/// output is its address; it stops when its standard input closes, printing the rest of its answer.
final class BackgroundScript: Sendable {
    private let child: ChildProcess
    private let files: TemporaryFiles
    private let waiter: ProcessWaiter
    private let done: Task<Int32, any Error>

    init(python: URL, script: URL, arguments: [String]) throws {
        files = try TemporaryFiles(count: 2)
        child = try ChildProcess(python, arguments: ["-u", script.path] + arguments,
                                 environment: PythonEnvironment.childEnvironment,
                                 stdin: .pipe, stdout: .file(files.urls[0]), stderr: .file(files.urls[1]))
        waiter = ProcessWaiter(child)
        let waiter = waiter
        let name = script.lastPathComponent
        done = Task { try await waiter.run(timeout: .seconds(120), name: name) }
    }

    /// The first line the script printed, waiting up to `timeout` for it.
    func firstLine(timeout: Duration = .seconds(20)) async throws -> String {
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while clock.now < deadline {
            let text = String(decoding: (try? Data(contentsOf: files.urls[0])) ?? Data(), as: UTF8.self)
            if let newline = text.firstIndex(of: "\n") { return String(text[..<newline]) }
            try await Task.sleep(for: .milliseconds(20))
        }
        waiter.terminate()
        throw InteropError("the script printed no first line within \(timeout):\n\(stderrText)")
    }

    /// Closes the script's standard input, waits for it to exit and returns everything it printed
    /// after its first line.
    func finish() async throws -> String {
        try? child.standardInput?.close()
        let status = try await done.value
        let text = String(decoding: (try? Data(contentsOf: files.urls[0])) ?? Data(), as: UTF8.self)
        defer { files.remove() }
        guard status == 0 else { throw InteropError("the script exited \(status):\n\(stderrText)\n\(text)") }
        guard let newline = text.firstIndex(of: "\n") else { return "" }
        return String(text[text.index(after: newline)...])
    }

    /// Stops the script without waiting for its answer.
    func cancel() {
        waiter.terminate()
    }

    private var stderrText: String {
        String(decoding: (try? Data(contentsOf: files.urls[1])) ?? Data(), as: UTF8.self)
    }
}

/// A few fresh file names in the temporary directory, removed together.
struct TemporaryFiles: Sendable {
    let urls: [URL]

    init(count: Int) throws {
        let base = FileManager.default.temporaryDirectory.appendingPathComponent("till-interop-\(UUID().uuidString)")
        urls = (0..<count).map { base.appendingPathExtension(String($0)) }
    }

    func remove() {
        for url in urls { try? FileManager.default.removeItem(at: url) }
    }
}

/// An exclusive `flock` on a file, so two test processes never build the same virtualenv at once.
struct FileLock: Sendable {
    let descriptor: Int32

    /// Waits (polling, without blocking a thread) until the lock is held.
    static func acquire(_ url: URL, timeout: Duration) async throws -> FileLock {
        let descriptor = open(url.path, O_CREAT | O_RDWR, 0o644)
        guard descriptor >= 0 else { throw InteropError("cannot open the lock file \(url.path)") }
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while flock(descriptor, LOCK_EX | LOCK_NB) != 0 {
            guard clock.now < deadline else {
                close(descriptor)
                throw InteropError("another process held \(url.path) for more than \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        return FileLock(descriptor: descriptor)
    }

    func release() {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
