import Foundation
import GRDB
import Till
import TillService

/// Group commit for SQLite: the durable writes that arrive while the writer is busy wait in a queue, and
/// the writer's next turn runs all of them in **one** transaction and **one** commit, so one WAL sync
/// (`synchronous = FULL`) serves many requests.
///
/// - Each write runs in its own savepoint: one that throws is rolled back alone and fails only its own
///   caller; the others in the batch commit.
/// - A caller is answered only after the transaction that holds its write has committed (its result is
///   held until then). If the commit fails, every write of the batch fails and none is applied.
/// - Writes run in the order they arrived, on SQLite's one writer connection, so each sees the ones before
///   it (two notifications of one event in one batch: the second finds the first).
/// - Nothing waits on a timer: a lone write commits at once, and a batch forms only from the writes that
///   arrived while the previous commit was syncing.
final class GroupCommitWriter: Sendable {
    /// One queued write: runs in a savepoint and says how to answer its caller once the batch committed;
    /// or is failed with the batch.
    private struct Job: Sendable {
        let run: @Sendable (Database) throws -> @Sendable () -> Void
        let fail: @Sendable (any Error) -> Void
    }

    private struct State {
        var queue: [Job] = []
        var draining = false
    }

    private let pool: DatabasePool
    private let maxBatch: Int
    private let state = Locked(State())
    private let counters = Locked((transactions: 0, writes: 0))

    /// How many transactions committed and how many writes they held (tests and diagnostics).
    var statistics: (transactions: Int, writes: Int) { counters.withLock { $0 } }

    /// - Parameter maxBatch: the most writes one transaction takes (the rest wait for the next turn).
    init(pool: DatabasePool, maxBatch: Int = 256) {
        self.pool = pool
        self.maxBatch = max(1, maxBatch)
    }

    /// Runs `body` in the next batch's transaction and returns its result once that transaction committed.
    /// - Throws: what `body` threw (its savepoint rolled back, the batch unharmed), or the commit's error.
    func write<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = Job(run: { db in
                // The write's own error rolls back its savepoint and fails only its caller. An error of the
                // savepoint itself (a ROLLBACK TO that failed) escapes, and fails the whole batch: the write's
                // partial changes could otherwise commit while its caller heard it failed.
                var value: T?
                var failure: (any Error)?
                try db.inSavepoint {
                    do {
                        value = try body(db)
                        return .commit
                    } catch {
                        failure = error
                        return .rollback
                    }
                }
                if let failure { return { continuation.resume(throwing: failure) } }
                guard let value else { return { continuation.resume(throwing: StoreError.unavailable("a write returned nothing")) } }
                return { continuation.resume(returning: value) }
            }, fail: { continuation.resume(throwing: $0) })
            let start = state.withLock { state -> Bool in
                state.queue.append(job)
                guard !state.draining else { return false }
                state.draining = true
                return true
            }
            if start { Task { await self.drain() } }
        }
    }

    /// Takes batches until the queue is empty.
    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Job] in
                let taken = Array(state.queue.prefix(maxBatch))
                state.queue.removeFirst(taken.count)
                if taken.isEmpty { state.draining = false }
                return taken
            }
            if batch.isEmpty { return }
            do {
                let answers = try await pool.writeWithoutTransaction { db in
                    var answers: [@Sendable () -> Void] = []
                    answers.reserveCapacity(batch.count)
                    try db.inTransaction(.immediate) {
                        for job in batch { answers.append(try job.run(db)) }
                        return .commit
                    }
                    return answers
                }
                counters.withLock {
                    $0.transactions += 1
                    $0.writes += batch.count
                }
                for answer in answers { answer() }
            } catch {
                for job in batch { job.fail(error) }
            }
        }
    }
}
