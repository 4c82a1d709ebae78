import Foundation
import Logging
import Till

/// What a test run needs once per process: quiet logs, and a closing line that says what was skipped and why.
///
/// The test binary calls ``setUp()`` when it is loaded (the `TillTestSetup` target, before any test), so every
/// logger a test or a server under test creates logs only at `TILL_TEST_LOG_LEVEL` (`critical` unless set: a
/// run prints the tests' own results, not thousands of lines of servers at work). To see a failing test's
/// logs, run it again with `TILL_TEST_LOG_LEVEL=debug swift test --filter NAME`.
public enum TestRun {
    private static let skipped = Locked([String: Int]())

    /// Counts one test case of kind `what` skipped because of `reason`; the run's last line says how many, and why.
    public static func skipped(_ what: String, because reason: String) {
        skipped.withLock { $0["\(what) (\(reason))", default: 0] += 1 }
    }

    /// The closing line: `skipped: N PostgreSQL test cases (reason)`, or nothing when nothing was skipped.
    public static var summary: String? {
        let counts = skipped.withLock { $0 }
        guard !counts.isEmpty else { return nil }
        return "skipped: " + counts.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: "; ")
    }

    /// The log level from `TILL_TEST_LOG_LEVEL`, `critical` when unset or unknown.
    public static var logLevel: Logger.Level {
        ProcessInfo.processInfo.environment["TILL_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .critical
    }

    /// Bootstraps logging at ``logLevel`` (standard error) and prints ``summary`` when the process exits.
    public static func setUp() {
        let level = logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        atexit {
            if let summary = TestRun.summary { FileHandle.standardError.write(Data("\n\(summary)\n".utf8)) }
        }
    }
}

/// Called by the `TillTestSetup` target's load-time constructor.
@_cdecl("till_test_setup")
public func tillTestSetup() { TestRun.setUp() }
