import Foundation
import TillService
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
import TillService
#endif

/// One merchant server per SQLite file: an exclusive `flock` on `<database>.till-lock`, held while the server
/// runs. SQLite keeps its own locks per transaction, so a second server on the same file would start and share it
/// without a word — and the reconcilers and the in-process caches of two instances are not written for that
/// (PostgreSQL is the store for several instances). The kernel drops the lock when the process ends, however it
/// ends, so a server killed with SIGKILL can be restarted at once. Commands that only read or settle
/// (`till reconcile`, `till quarantine`) do not take it.
public final class SQLiteInstanceLock: @unchecked Sendable {
    /// The lock file.
    public let path: String
    private let descriptor: Int32

    /// Takes the lock for `database` (the SQLite file's path), or throws at once when another process holds it.
    /// - Throws: ``StoreError/unavailable(_:)`` saying another instance holds the file, or why the lock file
    ///   cannot be opened.
    public init(database: String) throws {
        // The file itself, whatever path names it (a symbolic link to the same database takes the same lock).
        path = URL(fileURLWithPath: database).resolvingSymlinksInPath().path + ".till-lock"
        let fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw StoreError.unavailable("cannot open the instance lock \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(fd, LOCK_EX | LOCK_NB) == 0 else {
            close(fd)
            throw StoreError.unavailable("another till server is already using \(database) (it holds \(path)); "
                                         + "one server per SQLite file — run several over PostgreSQL")
        }
        descriptor = fd
    }

    deinit {
        flock(descriptor, LOCK_UN)
        close(descriptor)
    }
}
