import CSQLite
import NIOPosix
import Synchronization

/// Keeps the writer's WAL short without making a batch of payments wait while it is copied.
///
/// SQLite's automatic checkpoint runs inside the COMMIT that crosses 1,000 pages, on the writer
/// thread: that batch and every batch queued behind it waited while pages were copied into the
/// database file and the file was synced. It was the authorize benchmark's tail: p99 was 2.3×
/// p50 with it and 1.6–1.7× with no checkpoint at all.
///
/// Here the copying runs on a connection and a thread of their own, as PASSIVE checkpoints, which
/// never take the write lock, round after round until few frames are left. A checkpoint beside
/// steady writes never finds the whole WAL copied, though, and SQLite starts the WAL over only
/// when a write transaction begins on a fully copied one. So the writer copies the few frames
/// left itself, between two batches (``finish(on:)``), and its next batch starts the WAL over.
/// Past ``backstop`` pages the writer checkpoints inside its COMMIT as SQLite would have: the
/// WAL stays bounded even if the background never catches up.
final class SQLiteCheckpointer: @unchecked Sendable {
    /// Pages of WAL that start the background (SQLite's own default is 1,000). Measured with
    /// `Benchmarks/bench-authorize` at c=16: 250 gave p99 ÷ p50 of 1.71–1.74, 500 1.78–1.97, 1,000
    /// 1.99–2.15 and 4,000 2.9–3.3: small copies, often, disturb the commits' own syncs least.
    static let threshold: Int32 = 250
    static let backstop: Int32 = 16 * threshold
    /// Frames the background leaves to the writer: copying so few takes it a moment.
    static let remainder: Int32 = 32
    /// Rounds per start: against a reader that pins old frames, the next commit starts again.
    static let maximumRounds = 8

    private let handle: OpaquePointer
    private let thread = NIOThreadPool(numberOfThreads: 1)
    private let running = Atomic<Bool>(false)
    /// The background copied all but ``remainder`` frames: the writer finishes between batches.
    private let caughtUp = Atomic<Bool>(false)
    /// Pages in the WAL after the writer's last commit (SQLite's count), for tests.
    let walPages = Atomic<Int>(0)
    /// Background rounds, and the writer's finishes, for tests.
    let rounds = Atomic<Int>(0)
    let finishes = Atomic<Int>(0)

    init(path: String) throws(SQLiteDatabase.Failure) {
        let db = try SQLiteDatabase.open(path, flags: SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX)
        // A connection learns the journal mode when it first reads the file; until then a
        // checkpoint does nothing, as on a database not in WAL mode.
        guard sqlite3_exec(db, "PRAGMA journal_mode = WAL", nil, nil, nil) == SQLITE_OK else {
            let message = String(cString: sqlite3_errmsg(db))
            sqlite3_close(db)
            throw SQLiteDatabase.Failure(code: SQLITE_CANTOPEN, message: "\(path): \(message)")
        }
        handle = db
        thread.start()
    }

    deinit {
        // A running round holds `self`: when this runs, the thread is idle.
        thread.shutdownGracefully { _ in }
        sqlite3_close_v2(handle)
    }

    /// Replaces the automatic checkpoint of `writer`, which must close before this is released.
    func attach(to writer: OpaquePointer) {
        let context = Unmanaged.passUnretained(self).toOpaque()
        sqlite3_wal_hook(
            writer,
            { context, writer, _, pages in
                guard let context else { return SQLITE_OK }
                let checkpointer = Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue()
                checkpointer.walPages.store(Int(pages), ordering: .relaxed)
                if pages >= SQLiteCheckpointer.backstop {
                    sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                } else if pages >= SQLiteCheckpointer.threshold {
                    checkpointer.start()
                }
                return SQLITE_OK
            }, context)
    }

    /// On the writer's thread, between batches: copies the frames the background left, so that
    /// the next batch starts the WAL over. Does nothing unless the background has caught up.
    func finish(on writer: OpaquePointer) {
        guard caughtUp.exchange(false, ordering: .acquiringAndReleasing) else { return }
        sqlite3_wal_checkpoint_v2(writer, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        finishes.add(1, ordering: .relaxed)
    }

    /// One run of rounds at a time; a commit that crosses the threshold meanwhile needs none of its own.
    private func start() {
        guard running.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        thread.submit { _ in
            defer { self.running.store(false, ordering: .releasing) }
            for _ in 0..<Self.maximumRounds {
                var frames: Int32 = 0
                var copied: Int32 = 0
                let code = sqlite3_wal_checkpoint_v2(self.handle, nil, SQLITE_CHECKPOINT_PASSIVE, &frames, &copied)
                self.rounds.add(1, ordering: .relaxed)
                // BUSY: the writer's own checkpoint holds the lock; the next commit starts again.
                guard code == SQLITE_OK else { return }
                if frames - copied <= Self.remainder {
                    self.caughtUp.store(true, ordering: .releasing)
                    return
                }
            }
        }
    }
}
