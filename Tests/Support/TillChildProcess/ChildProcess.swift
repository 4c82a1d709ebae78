import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A child process started with `posix_spawn`, for the tests that run `till server` and the vendors'
/// Python code.
///
/// Foundation's `Process.run()` on Linux is not used: in the toolchain this package is built with (Swift
/// 6.3.1) it copies each `/proc/self/fd` entry as a whole 256-byte `d_name`, which reads past the end of
/// glibc's directory buffer and now and then kills the test process with SIGSEGV (fixed upstream in
/// swift-corelibs-foundation#5472). Here the child closes every descriptor above 2 with
/// `posix_spawn_file_actions_addclosefrom_np` instead, so it inherits nothing but its three streams, and
/// nothing walks `/proc/self/fd`.
public final class ChildProcess: @unchecked Sendable {
    /// Where a standard stream of the child comes from or goes to.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// A pipe whose other end the parent holds (``standardInput``, ``standardOutput``, ``standardError``).
        case pipe
        /// A file: read for standard input; created or truncated for output.
        case file(URL)
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        /// It exited with this status.
        case exited(Int32)
        /// A signal ended it.
        case signalled(Int32)

        public var description: String {
            switch self {
            case .exited(let status): "exited \(status)"
            case .signalled(let signal): "killed by signal \(signal)"
            }
        }
    }

    /// The child's process id.
    public let processIdentifier: pid_t
    /// The writing end of the child's standard input, when it is a ``Stream/pipe``.
    public let standardInput: FileHandle?
    /// The reading end of the child's standard output, when it is a ``Stream/pipe``.
    public let standardOutput: FileHandle?
    /// The reading end of the child's standard error, when it is a ``Stream/pipe``.
    public let standardError: FileHandle?

    private let lock = NSLock()
    private var ended: Termination?

    /// Starts `executable` with exactly `arguments` and `environment` (nothing is inherited that is not
    /// passed; ``inheritedEnvironment(_:)`` builds the usual one).
    public init(_ executable: URL, arguments: [String], environment: [String: String],
                stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null) throws {
        var actions = try FileActions()
        defer { actions.destroy() }
        var parentEnds: [Int32: Int32] = [:]  // target stream -> the parent's end of its pipe
        var childEnds: [Int32] = []
        var started = false
        // Whatever fails before the child starts, no pipe end is left open.
        defer {
            if !started {
                for fd in parentEnds.values { close(fd) }
                for fd in childEnds { close(fd) }
            }
        }
        for (target, stream) in [(Int32(0), stdin), (1, stdout), (2, stderr)] {
            switch stream {
            case .null:
                try actions.open(target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY)
            case .file(let url):
                try actions.open(target, url.path, target == 0 ? O_RDONLY : (O_WRONLY | O_CREAT | O_TRUNC))
            case .pipe:
                var ends: [Int32] = [-1, -1]
                guard pipe(&ends) == 0 else { throw ChildProcessError("pipe", errno: errno) }
                // Close-on-exec for the parent's sake; every child started here closes all but 0-2 anyway.
                for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
                // The child reads its standard input from the reading end and writes to the writing end.
                let (child, parent) = target == 0 ? (ends[0], ends[1]) : (ends[1], ends[0])
                childEnds.append(child)
                parentEnds[target] = parent
                try actions.duplicate(child, to: target)
            }
        }
        try actions.closeEverythingFrom(3)

        var attributes = try SpawnAttributes()
        defer { attributes.destroy() }

        let argv = [executable.path] + arguments
        let envp = environment.map { "\($0.key)=\($0.value)" }
        var pid: pid_t = 0
        let status = withCStrings(argv) { argv in
            withCStrings(envp) { envp in
                actions.withPointer { actions in
                    attributes.withPointer { attributes in
                        posix_spawn(&pid, executable.path, actions, attributes, argv, envp)
                    }
                }
            }
        }
        guard status == 0 else { throw ChildProcessError("posix_spawn \(executable.lastPathComponent)", errno: status) }
        started = true
        for fd in childEnds { close(fd) }
        processIdentifier = pid
        standardInput = parentEnds[0].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        standardOutput = parentEnds[1].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
        standardError = parentEnds[2].map { FileHandle(fileDescriptor: $0, closeOnDealloc: true) }
    }

    /// This process's environment with `overrides` applied (a nil value removes the variable).
    public static func inheritedEnvironment(_ overrides: [String: String?] = [:]) -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        for (name, value) in overrides { environment[name] = value }
        return environment
    }

    /// How the child ended, or nil while it runs (reaping it if it has just ended).
    public var termination: Termination? {
        lock.withLock {
            if ended == nil { ended = reap(blocking: false) }
            return ended
        }
    }

    /// Whether the child still runs.
    public var isRunning: Bool { termination == nil }

    /// Sends `signal` to the child, unless it has already been reaped.
    public func send(_ signal: Int32) {
        lock.withLock {
            if ended == nil { _ = kill(processIdentifier, signal) }
        }
    }

    /// Sends SIGTERM.
    public func terminate() { send(SIGTERM) }

    /// Blocks the calling thread until the child ends. Use ``exit()`` from async code.
    @discardableResult
    public func waitUntilExit() -> Termination {
        while true {
            if let done = termination { return done }
            usleep(2_000)
        }
    }

    /// Waits, without blocking a thread, until the child ends.
    @discardableResult
    public func exit() async -> Termination {
        while true {
            if let done = termination { return done }
            try? await Task.sleep(for: .milliseconds(5))
        }
    }

    /// Called with `lock` held.
    private func reap(blocking: Bool) -> Termination? {
        var status: Int32 = 0
        while true {
            let result = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG)
            if result == processIdentifier { break }
            if result == -1 && errno == EINTR { continue }
            // 0: still running. -1 (ECHILD): not ours to wait for; treat it as gone.
            return result == 0 ? nil : .exited(-1)
        }
        let signal = status & 0x7f
        return signal == 0 ? .exited((status >> 8) & 0xff) : .signalled(signal)
    }

    deinit {
        // Never leave a zombie: a child still running when the last reference goes is killed and reaped.
        if ended == nil, reap(blocking: false) == nil {
            _ = kill(processIdentifier, SIGKILL)
            _ = reap(blocking: true)
        }
    }
}

/// A failed system call while starting a child process.
public struct ChildProcessError: Error, CustomStringConvertible {
    public let description: String

    init(_ call: String, errno code: Int32) {
        description = "\(call) failed: \(String(cString: strerror(code))) (\(code))"
    }
}

/// `posix_spawn_file_actions_t`, which is a struct on Glibc and a pointer on Darwin.
private struct FileActions {
    #if canImport(Glibc)
    typealias Storage = posix_spawn_file_actions_t
    private var actions = Storage()
    #elseif canImport(Darwin)
    typealias Storage = posix_spawn_file_actions_t?
    private var actions: Storage = nil
    #else
    #error("ChildProcess supports glibc Linux and Darwin")
    #endif

    init() throws {
        let status = posix_spawn_file_actions_init(&actions)
        guard status == 0 else { throw ChildProcessError("posix_spawn_file_actions_init", errno: status) }
    }

    mutating func open(_ target: Int32, _ path: String, _ flags: Int32) throws {
        let status = posix_spawn_file_actions_addopen(&actions, target, path, flags, 0o644)
        guard status == 0 else { throw ChildProcessError("posix_spawn_file_actions_addopen", errno: status) }
    }

    mutating func duplicate(_ fd: Int32, to target: Int32) throws {
        let status = posix_spawn_file_actions_adddup2(&actions, fd, target)
        guard status == 0 else { throw ChildProcessError("posix_spawn_file_actions_adddup2", errno: status) }
    }

    /// Closes every descriptor from `lowest` up in the child.
    mutating func closeEverythingFrom(_ lowest: Int32) throws {
        #if canImport(Glibc)
        // glibc 2.34+; the Glibc module does not import it, so it is looked up by name.
        typealias CloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else {
            throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np (glibc 2.34 or later)", errno: ENOSYS)
        }
        let status = unsafeBitCast(symbol, to: CloseFrom.self)(&actions, lowest)
        guard status == 0 else { throw ChildProcessError("posix_spawn_file_actions_addclosefrom_np", errno: status) }
        #elseif canImport(Darwin)
        // Darwin: SpawnAttributes sets POSIX_SPAWN_CLOEXEC_DEFAULT instead.
        #endif
    }

    mutating func withPointer<R>(_ body: (UnsafePointer<Storage>) -> R) -> R {
        withUnsafePointer(to: &actions) { body($0) }
    }

    mutating func destroy() {
        posix_spawn_file_actions_destroy(&actions)
    }
}

/// `posix_spawnattr_t`: every signal back to its default action and none blocked in the child (the
/// spawning thread may block some, and a child that inherited a blocked SIGTERM could not be stopped).
private struct SpawnAttributes {
    #if canImport(Glibc)
    typealias Storage = posix_spawnattr_t
    private var attributes = Storage()
    #elseif canImport(Darwin)
    typealias Storage = posix_spawnattr_t?
    private var attributes: Storage = nil
    #endif

    init() throws {
        var status = posix_spawnattr_init(&attributes)
        guard status == 0 else { throw ChildProcessError("posix_spawnattr_init", errno: status) }
        var none = sigset_t()
        sigemptyset(&none)
        var all = sigset_t()
        sigfillset(&all)
        var flags = Int32(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)
        #if canImport(Darwin)
        flags |= Int32(POSIX_SPAWN_CLOEXEC_DEFAULT)
        #endif
        status = posix_spawnattr_setsigmask(&attributes, &none)
        if status == 0 { status = posix_spawnattr_setsigdefault(&attributes, &all) }
        if status == 0 { status = posix_spawnattr_setflags(&attributes, Int16(flags)) }
        guard status == 0 else {
            posix_spawnattr_destroy(&attributes)
            throw ChildProcessError("posix_spawnattr", errno: status)
        }
    }

    mutating func withPointer<R>(_ body: (UnsafePointer<Storage>) -> R) -> R {
        withUnsafePointer(to: &attributes) { body($0) }
    }

    mutating func destroy() {
        posix_spawnattr_destroy(&attributes)
    }
}

/// A NULL-terminated array of C strings for `argv` and `envp`, alive for the duration of `body`.
private func withCStrings<R>(_ strings: [String], _ body: (UnsafePointer<UnsafeMutablePointer<CChar>?>) -> R) -> R {
    let copies: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) } + [nil]
    defer { for copy in copies { free(copy) } }
    return copies.withUnsafeBufferPointer { body($0.baseAddress!) }
}
