import Foundation
import OrchardCore
import Testing

/// The token-event inbox's contract, on SQLite, in memory and on PostgreSQL alike: a
/// notification recorded once per (merchant, event ID), a cap per source, leases fair across
/// sources, compare-and-set attempts, standings and purge.
@Suite("Token-event inbox contract: SQLite, in memory and PostgreSQL")
struct TokenEventInboxContractTests {
    typealias Kind = StoreContractTests.Kind
    static let merchant = "merchant.test"

    static func at(_ seconds: Int) -> Date { ShopStoreContractTests.at(seconds) }

    static func item(_ eventId: String, merchant: String = merchant, source: String, at seconds: Int = 0) -> TokenEventItem {
        TokenEventItem.received(merchantIdentifier: merchant, eventId: eventId, source: source, at: at(seconds))
    }

    /// Records `item` under a cap no test reaches unless it means to.
    @discardableResult
    static func record(_ store: any OrchardStore, _ item: TokenEventItem, cap: Int = 100) async throws -> TokenEventRecording {
        try await store.recordTokenEvent(item, maxPendingFromSource: cap)
    }

    static func lease(_ store: any OrchardStore, at seconds: Int, perSource: Int = 1, limit: Int = 10) async throws -> [String] {
        try await store.leaseTokenEvents(at: at(seconds), until: at(seconds + 60), perSource: perSource, limit: limit).map(\.eventId)
    }

    static func finish(_ store: any OrchardStore, _ eventId: String, _ state: TokenEventItem.State, at seconds: Int) async throws -> Bool {
        let item = try #require(try await store.tokenEvent(merchantIdentifier: merchant, eventId: eventId))
        return try await store.recordTokenEventAttempt(
            TokenEventAttempt(itemId: item.id, attempts: item.attempts, state: state, error: state == .applied ? nil : "x", at: at(seconds))
        )
    }

    @Test(
        "a merchant's event is recorded once, whoever sends it and whatever became of it; another merchant's is its own",
        arguments: Kind.enabled)
    func dedupe(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let first = Self.item("evt-1", source: "203.0.113.7")
            #expect(try await Self.record(store, first) == .recorded)
            #expect(try await Self.record(store, Self.item("evt-1", source: "198.51.100.1", at: 5)) == .duplicate)
            #expect(try await Self.record(store, Self.item("evt-1", merchant: "merchant.other", source: "203.0.113.7")) == .recorded)
            let stored = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "evt-1"))
            #expect(stored == first, "the first notification's record, as written")
            #expect(stored.state == .pending && stored.attempts == 0 && stored.nextAttemptAt == Self.at(0) && stored.finishedAt == nil)
            #expect(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "evt-2") == nil)

            #expect(try await Self.finish(store, "evt-1", .applied, at: 10))
            #expect(try await Self.record(store, Self.item("evt-1", source: "203.0.113.7", at: 20)) == .duplicate, "finished, still known")
            #expect(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "evt-1")?.state == .applied)
        }
    }

    @Test(
        "a source past its pending cap records nothing; a duplicate is still a duplicate; a finished item frees a place",
        arguments: Kind.enabled)
    func sourceCap(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let first = try await Self.record(store, Self.item("a1", source: "A"), cap: 2)
            #expect(first == .recorded)
            #expect(try await Self.record(store, Self.item("a2", source: "A"), cap: 2) == .recorded)
            #expect(try await Self.record(store, Self.item("a3", source: "A"), cap: 2) == .sourceFull)
            #expect(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "a3") == nil, "nothing recorded")
            #expect(try await Self.record(store, Self.item("a1", source: "A"), cap: 2) == .duplicate)
            #expect(try await Self.record(store, Self.item("b1", source: "B"), cap: 2) == .recorded, "each source its own cap")
            #expect(try await Self.record(store, Self.item("a3", source: "A"), cap: 3) == .recorded, "a higher cap (a trusted source)")
            #expect(try await Self.record(store, Self.item("a4", source: "A"), cap: 3) == .sourceFull)
            #expect(try await Self.finish(store, "a1", .unknown, at: 1))
            #expect(try await Self.record(store, Self.item("a4", source: "A"), cap: 3) == .recorded)
        }
    }

    @Test(
        "leases take at most perSource due items of each source, oldest first, each out of sight until its lease ends",
        arguments: Kind.enabled)
    func fairLease(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for (index, seconds) in [0, 1, 2, 3].enumerated() {
                try await Self.record(store, Self.item("a\(index)", source: "A", at: seconds))
            }
            try await Self.record(store, Self.item("b0", source: "B", at: 5))
            try await Self.record(store, Self.item("c0", source: "C", at: 30))
            #expect(try await Self.lease(store, at: 10) == ["a0", "b0"], "one per source; C's is not due yet")
            let leased = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "a0"))
            #expect(leased.nextAttemptAt == Self.at(70) && leased.state == .pending && leased.attempts == 0)
            #expect(try await Self.lease(store, at: 10) == ["a1"], "the leased ones are passed by; A's next comes up")
            #expect(try await Self.lease(store, at: 31, perSource: 2) == ["a2", "a3", "c0"])
            #expect(try await Self.lease(store, at: 40).isEmpty)
            #expect(try await Self.lease(store, at: 70, limit: 1) == ["a0"], "an expired lease is handed out again, oldest first")
            #expect(try await Self.lease(store, at: 70) == ["a1", "b0"], "a0 is held again; A's next due one comes up")
            #expect(try await Self.finish(store, "b0", .applied, at: 71))
            #expect(
                try await Self.lease(store, at: 1000, perSource: 10, limit: 100) == ["a2", "a3", "c0", "a0", "a1"],
                "by due time, then by arrival")
        }
    }

    @Test(
        "attempts are a compare-and-set on (pending, attempts); a postponement is not an attempt; finishing is final",
        arguments: Kind.enabled)
    func compareAndSet(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await Self.record(store, Self.item("e1", source: "A"))
            let item = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "e1"))
            func attempt(
                _ attempts: Int, _ state: TokenEventItem.State, counted: Bool = true, error: String? = nil, at seconds: Int,
                next: Int? = nil
            ) async throws -> Bool {
                try await store.recordTokenEventAttempt(
                    TokenEventAttempt(
                        itemId: item.id, attempts: attempts, state: state, counted: counted, error: error, at: Self.at(seconds),
                        nextAttemptAt: next.map(Self.at)))
            }
            #expect(try await attempt(1, .applied, at: 1) == false, "not at one attempt yet")
            #expect(try await attempt(0, .pending, counted: false, at: 2, next: 12), "postponed for the budget")
            var now = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "e1"))
            #expect(now.attempts == 0 && now.nextAttemptAt == Self.at(12) && now.lastError == nil && now.state == .pending)
            #expect(try await attempt(0, .pending, error: "Apple unreachable", at: 13, next: 43))
            #expect(try await attempt(0, .pending, error: "again", at: 14, next: 44) == false, "the same attempt twice")
            now = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "e1"))
            #expect(now.attempts == 1 && now.nextAttemptAt == Self.at(43) && now.lastError == "Apple unreachable")
            #expect(try await attempt(1, .pending, counted: false, at: 44, next: 50))
            now = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "e1"))
            #expect(now.attempts == 1 && now.lastError == "Apple unreachable", "a postponement keeps the last error")

            #expect(try await attempt(1, .applied, at: 50))
            now = try #require(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "e1"))
            #expect(now.state == .applied && now.attempts == 2 && now.finishedAt == Self.at(50) && now.nextAttemptAt == nil)
            #expect(now.lastError == nil)
            #expect(try await attempt(2, .failed, at: 51) == false, "finished is final")
            #expect(try await Self.lease(store, at: 10_000).isEmpty)
            let unknown = TokenEventAttempt(itemId: "tev_none", attempts: 0, state: .applied, at: Self.at(52))
            #expect(try await store.recordTokenEventAttempt(unknown) == false)
        }
    }

    @Test(
        "a source's standing: its latest applied and unknown items' finishing times; pending and failed ones say nothing",
        arguments: Kind.enabled)
    func standings(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for (event, source) in [("a1", "A"), ("a2", "A"), ("a3", "A"), ("b1", "B"), ("c1", "C"), ("d1", "D")] {
                try await Self.record(store, Self.item(event, source: source))
            }
            #expect(try await Self.finish(store, "a1", .applied, at: 10))
            #expect(try await Self.finish(store, "a2", .unknown, at: 20))
            #expect(try await Self.finish(store, "a3", .applied, at: 30))
            #expect(try await Self.finish(store, "b1", .unknown, at: 40))
            #expect(try await Self.finish(store, "c1", .failed, at: 50))
            let standings = try await store.tokenEventStandings(sources: ["A", "B", "C", "D", "E"])
            #expect(standings["A"] == TokenEventSourceStanding(lastConfirmed: Self.at(30), lastRefuted: Self.at(20)))
            #expect(standings["B"] == TokenEventSourceStanding(lastConfirmed: nil, lastRefuted: Self.at(40)))
            #expect(standings["C"] == nil && standings["D"] == nil && standings["E"] == nil)
            #expect(try await store.tokenEventStandings(sources: []).isEmpty)
        }
    }

    @Test("purge deletes items finished before the cutoff, never a pending one", arguments: Kind.enabled)
    func purge(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for event in ["old-applied", "old-unknown", "old-failed", "recent", "pending"] {
                try await Self.record(store, Self.item(event, source: "A"))
            }
            #expect(try await Self.finish(store, "old-applied", .applied, at: 10))
            #expect(try await Self.finish(store, "old-unknown", .unknown, at: 11))
            #expect(try await Self.finish(store, "old-failed", .failed, at: 12))
            #expect(try await Self.finish(store, "recent", .applied, at: 500))
            #expect(try await store.purge(before: PurgeCutoffs(deliveredWebhooks: Self.at(1000)), limit: 10).tokenEvents == 0)
            let cutoffs = PurgeCutoffs(finishedTokenEvents: Self.at(100))
            let first = try await store.purge(before: cutoffs, limit: 2)
            let second = try await store.purge(before: cutoffs, limit: 2)
            #expect(first.tokenEvents == 2 && second.tokenEvents == 1 && first.orders == 0 && first.webhookEvents == 0)
            #expect(try await store.purge(before: cutoffs, limit: 2).tokenEvents == 0)
            for event in ["old-applied", "old-unknown", "old-failed"] {
                #expect(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: event) == nil, "\(event) is gone")
            }
            #expect(try await store.purge(before: PurgeCutoffs(finishedTokenEvents: Self.at(100_000)), limit: 10).tokenEvents == 1)
            #expect(try await store.tokenEvent(merchantIdentifier: Self.merchant, eventId: "pending")?.state == .pending)
            #expect(try await Self.record(store, Self.item("old-applied", source: "A")) == .recorded, "a purged event is new again")
        }
    }
}
