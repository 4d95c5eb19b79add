import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Synchronization
import Testing

@testable import OrchardSQLite

/// The SQLite writer's group commit: transactions that wait together share one COMMIT, each in
/// its own savepoint, and every caller hears back only after that COMMIT.
@Suite("SQLite group commit")
struct SQLiteGroupCommitTests {
    struct Refused: Error, Equatable { var index: Int }

    /// What concurrent bodies write down (escaping closures capture a class, not a Mutex).
    final class Notes: Sendable {
        let entered = Atomic<Bool>(false)
        let batches = Mutex<Set<Int>>([])
    }

    /// A database with one table, `rows(id PRIMARY KEY, name UNIQUE)`.
    static func database(in directory: TemporaryDirectory) throws -> SQLiteDatabase {
        let database = try SQLiteDatabase(path: directory.path("group.sqlite"))
        try database.execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        return database
    }

    /// Holds the writer inside a first transaction until `count` more are queued behind it, so
    /// that those all go into the next batch together.
    static func queueBehindGate(
        _ database: SQLiteDatabase, count: Int, _ member: @escaping @Sendable (Int) async throws -> Void
    ) async throws -> [Result<Void, any Error>] {
        let gate = DispatchSemaphore(value: 0)
        let notes = Notes()
        let held = Task {
            try await database.run { db in
                try db.execute("INSERT INTO rows (name) VALUES ('gate')")
                notes.entered.store(true, ordering: .sequentiallyConsistent)
                gate.wait()
            }
        }
        try #require(try await Eventually.until(every: .milliseconds(1)) { notes.entered.load(ordering: .sequentiallyConsistent) })
        return try await withThrowingTaskGroup(of: (Int, Result<Void, any Error>).self) { group in
            for index in 0..<count {
                group.addTask {
                    do {
                        try await member(index)
                        return (index, .success(()))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            try #require(try await Eventually.until(every: .milliseconds(1)) { database.pendingWrites >= count })
            gate.signal()
            try await held.value
            var results = [Result<Void, any Error>](repeating: .success(()), count: count)
            for try await (index, result) in group { results[index] = result }
            return results
        }
    }

    @Test("a member that fails rolls back alone: the others in its batch are committed")
    func isolation() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Self.database(in: directory)
        let notes = Notes()
        let results = try await Self.queueBehindGate(database, count: 12) { index in
            try await database.run { db in
                notes.batches.withLock { _ = $0.insert(db.committedBatches.load(ordering: .sequentiallyConsistent)) }
                try db.execute("INSERT INTO rows (name) VALUES (\("row \(index)" as String))")
                switch index % 3 {
                case 1: throw Refused(index: index)  // after a write: the write must vanish
                case 2:
                    // A nested savepoint whose second statement breaks UNIQUE: everything of this member goes.
                    try db.savepoint("nested") {
                        try db.execute("INSERT INTO rows (name) VALUES (\("extra \(index)" as String))")
                        try db.execute("INSERT INTO rows (name) VALUES ('gate')")
                    }
                default: break
                }
            }
        }
        #expect(notes.batches.withLock { $0 } == [1], "all twelve ran in the batch after the gate's")
        for (index, result) in results.enumerated() {
            switch (index % 3, result) {
            case (0, .success): break
            case (1, .failure(let error)): #expect(error as? Refused == Refused(index: index))
            case (2, .failure(let error)): #expect((error as? SQLiteDatabase.Failure)?.isConstraint == true)
            default: Issue.record("member \(index) ended \(result)")
            }
        }
        let names = try await database.read { db in try db.query("SELECT name FROM rows ORDER BY id").map { $0.text("name") } }
        #expect(names == ["gate"] + stride(from: 0, to: 12, by: 3).map { "row \($0)" })
    }

    @Test("an answer comes after the COMMIT that covers it: another connection already sees the write")
    func acknowledgedAfterCommit() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Self.database(in: directory)
        let settings = try database.query("PRAGMA journal_mode").first?.text("journal_mode")
        #expect(settings == "wal")
        #expect(try database.query("PRAGMA synchronous").first?.integer("synchronous") == 2, "FULL: each COMMIT waits for its fsync")
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<40 {
                group.addTask {
                    let batchWhenWritten = try await database.run { db in
                        try db.execute("INSERT INTO rows (name) VALUES (\("row \(index)" as String))")
                        return db.committedBatches.load(ordering: .sequentiallyConsistent)
                    }
                    #expect(database.committedBatches.load(ordering: .sequentiallyConsistent) > batchWhenWritten)
                    // A read connection: another connection than the writer's.
                    let seen = try await database.read { db in
                        try db.query("SELECT COUNT(*) AS count FROM rows WHERE name = \("row \(index)" as String)")
                    }
                    #expect(seen.first?.integer("count") == 1, "row \(index) is committed when its writer hears back")
                }
            }
            try await group.waitForAll()
        }
        #expect(try await database.read { db in try db.query("SELECT COUNT(*) AS count FROM rows") }.first?.integer("count") == 40)
    }

    @Test("a read connection refuses to write: writes go through the group commit")
    func readsDoNotWrite() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let database = try Self.database(in: directory)
        await #expect(throws: SQLiteDatabase.Failure.self) {
            try await database.read { db in try db.execute("INSERT INTO rows (name) VALUES ('sneaky')") }
        }
        #expect(try database.query("SELECT COUNT(*) AS count FROM rows").first?.integer("count") == 0)
    }

    @Test("claims of one order in one batch: exactly one wins, the others are told why and change nothing")
    func concurrentClaims() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let store = try SQLiteStore(path: directory.path("orchard.sqlite"))
        try await store.insert(try TestRecords.order("o1"))
        try await store.insert(try TestRecords.order("o2"))
        let outcomes = try await withThrowingTaskGroup(of: CoreError.Code?.self) { group in
            for index in 0..<16 {
                group.addTask {
                    // Half race for o1 with their own tokens; half replay o1's first token on o2.
                    let claim =
                        index.isMultiple(of: 2)
                        ? TestRecords.claim("o1", transaction: "t\(index)", payment: "p\(index)")
                        : TestRecords.claim("o2", transaction: "t0", payment: "p\(index)")
                    return await TestRecords.refusal { _ = try await store.claimPayment(claim) }
                }
            }
            return try await group.reduce(into: [CoreError.Code?]()) { $0.append($1) }
        }
        let wins = outcomes.filter { $0 == nil }.count
        #expect(wins >= 1 && wins <= 2, "one claim of o1 wins; o2 goes to t0's replay only if it came first")
        #expect(outcomes.allSatisfy { [nil, .paymentInProgress, .replayedPayment].contains($0) })
        let claimed = try await store.payments(orderId: "o1") + store.payments(orderId: "o2")
        #expect(claimed.count == wins)
        #expect(Set(claimed.map(\.transactionId)).count == wins, "no transaction ID paid twice")
    }
}
