import Foundation
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardSQLite

/// The writer's WAL is copied back by a connection and a thread of their own, and the writer
/// only finishes the last few frames between batches, so that the WAL starts over.
@Suite("SQLite checkpoints off the writer")
struct SQLiteCheckpointTests {
    @Test("past the threshold the background copies the WAL back, the writer finishes it, the WAL starts over; every row stays")
    func checkpointsOffTheWriter() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("checkpoint.sqlite")
        let database = try SQLiteDatabase(path: path)
        try database.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        let checkpointer = try #require(database.checkpointer)
        #expect(checkpointer.rounds.load(ordering: .relaxed) == 0)
        // 60 commits of 25 rows of 4 KiB: about 1,500 pages of WAL, several times the threshold.
        var largest = 0
        for commit in 0..<60 {
            try await database.run { db in
                for row in 0..<25 {
                    try db.execute("INSERT INTO rows (id, body) VALUES (\(commit * 25 + row), \([UInt8](repeating: 7, count: 4096)))")
                }
            }
            largest = max(largest, checkpointer.walPages.load(ordering: .relaxed))
        }
        #expect(largest >= Int(SQLiteCheckpointer.threshold))
        #expect(try await Eventually.until { checkpointer.rounds.load(ordering: .relaxed) > 0 }, "no checkpoint ran off the writer")
        // Each further commit gives the writer a moment between batches to finish; one of them
        // then starts the WAL over, so SQLite counts only that commit's few pages.
        var next = 1500
        let restarted = try await Eventually.until {
            next += 1
            let id = next
            try await database.run { db in try db.execute("INSERT INTO rows (id, body) VALUES (\(id), x'00')") }
            return checkpointer.finishes.load(ordering: .relaxed) > 0 && checkpointer.walPages.load(ordering: .relaxed) < 10
        }
        #expect(restarted, "the WAL did not start over: \(checkpointer.walPages.load(ordering: .relaxed)) pages")
        let count = try await database.read { db in try db.query("SELECT COUNT(*) AS n FROM rows").first?.int("n") }
        #expect(count == next)
        // The pages reached the database file itself, not only the WAL.
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0
        #expect(size > 1000 * 4096, "the database file holds \(size) bytes")
    }

    @Test("read connections have no checkpointer of their own")
    func readersHaveNone() async throws {
        let directory = try TemporaryDirectory()
        let path = directory.path("readers.sqlite")
        let writer = try SQLiteDatabase(path: path)
        try writer.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY)")
        let reader = try SQLiteDatabase(path: path, readOnly: true)
        #expect(writer.checkpointer != nil)
        #expect(reader.checkpointer == nil)
    }
}
