import Foundation
import Logging
import OrchardCore
import OrchardPostgres
import OrchardTesting
import PostgresNIO
import Testing

/// The guard records as several instances meet them: leases taken at the same moment (on
/// PostgreSQL, on separate connections) never hand one record to two callers, and of results
/// recorded at once over the same version one wins.
@Suite("Guard records contract under concurrency: SQLite, in memory and PostgreSQL")
struct GuardRecordsConcurrencyContractTests {
    typealias Kind = StoreContractTests.Kind
    typealias Contract = GuardRecordsContractTests
    typealias Concurrency = StoreConcurrencyContractTests

    /// `count` domains of one merchant, all due at 0; their targets.
    static func watched(_ store: any OrchardStore, count: Int) async throws -> [String] {
        let subjects = (0..<count).map { Contract.subject("d\($0).example") }
        try await store.syncGuardSubjects(Set(subjects), at: Contract.at(0))
        return subjects.map(\.target)
    }

    @Test("concurrent leases hand each due record to one caller", arguments: Kind.enabled)
    func concurrentLeases(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let all = try await Self.watched(store, count: 60)
            try await Concurrency.warm(store)
            let leases = try await Concurrency.concurrently(8) { _ in try await Contract.lease(store, at: 10, until: 70, limit: 6) }
            #expect(leases.allSatisfy { $0.count <= 6 })
            let rest = try await Contract.lease(store, at: 10, until: 70, limit: 100)
            Concurrency.expectEachLeasedOnce(leases, rest: rest, all: all)
            #expect(try await Contract.lease(store, at: 69, limit: 100).isEmpty)
            let records = try await store.guardRecords(merchantIdentifier: nil)
            #expect(records.allSatisfy { $0.version == 1 && $0.nextCheckAt == Contract.at(70) }, "each leased (and bumped) once")
        }
    }

    @Test("of results recorded at once over the same version, one is written, with its event alone", arguments: Kind.enabled)
    func concurrentResults(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.watched(store, count: 1)
            let leased = try #require(try await store.leaseGuardChecks(at: Contract.at(0), until: Contract.at(60), limit: 1).first)
            try await Concurrency.warm(store)
            let outcomes = try await Concurrency.concurrently(8) { index in
                let (result, event) = try Contract.failed(leased, at: 10 + index)
                return try await store.recordGuardCheck(result, events: [event]) ? (result, event) : nil
            }
            let winners = outcomes.compactMap { $0 }
            #expect(winners.count == 1)
            let (result, event) = try #require(winners.first)
            var written = result
            written.version += 1
            #expect(try await Contract.stored(store, leased.subject) == written, "the winner's result, nobody else's")
            #expect(try await Contract.events(store) == [event], "one event: the winner's")
        }
    }

    @Test("a lease passes by a record another transaction holds, and takes it once let go", .enabled(if: PostgresServer.enabled))
    func skipLocked() async throws {
        let server = try await PostgresServer.shared()
        try await server.withDatabase(poolSize: 4) { settings in
            let opened = try await PostgresStore.open(
                settings, logger: Logger(label: "orchard.test"), eventLoops: PostgresServer.storeLoops)
            try await opened.withRunning { store in
                let all = try await Self.watched(store, count: 3)
                let held = try #require(all.first)
                let leased = try await PostgresLeaseLockTests.whileLocked(
                    settings, port: server.port, password: server.password,
                    "SELECT target FROM guard_records WHERE target = \(held) FOR UPDATE"
                ) { try await Contract.lease(store, at: 10, until: 70) }
                #expect(leased == Array(all.dropFirst()).sorted())
                #expect(try await Contract.lease(store, at: 10, until: 70) == [held], "let go: leased")
            }
        }
    }
}
