import Foundation
import OrchardCore
import Testing

/// The event feed's contract (`GET /v1/events`): a merchant's events in the order they were
/// written, after a cursor, whatever their delivery, until the retention purge takes them.
@Suite("Store contract: the webhook event feed")
struct EventFeedContractTests {
    typealias Kind = StoreContractTests.Kind
    static let (a, b) = (ShopStoreContractTests.merchant, ShopStoreContractTests.otherMerchant)

    static func at(_ seconds: Int) -> Date { ShopStoreContractTests.at(seconds) }

    static func subject(_ merchant: String) -> GuardSubject { GuardRecordsContractTests.subject("\(merchant).example", merchant: merchant) }

    /// Writes one event for each of `merchants`, in that order, each in a transaction of its own
    /// (a guard check's), each created earlier than the one before: the feed's order is the
    /// writing's, not the creation time's.
    static func write(_ store: any OrchardStore, _ merchants: [String], from first: Int = 0) async throws -> [WebhookEvent] {
        try await store.syncGuardSubjects([subject(a), subject(b)], at: at(0))
        var written: [WebhookEvent] = []
        for (index, merchant) in merchants.enumerated() {
            let record = try #require(try await GuardRecordsContractTests.stored(store, subject(merchant)))
            let event = try WebhookEvent.sample(.domainVerificationFailed, merchantIdentifier: merchant, at: at(1000 - first - index))
            let recorded = try await store.recordGuardCheck(record, events: [event])
            #expect(recorded)
            written.append(event)
        }
        return written
    }

    /// The page as the feed gives it once every transaction that wrote events has ended
    /// (PostgreSQL holds back events while an older transaction of the cluster, another test's, is open).
    static func page(_ store: any OrchardStore, _ merchant: String, after: String?, limit: Int = 50, count: Int) async throws
        -> [WebhookEvent]?
    {
        for _ in 0..<200 {
            let page = try await store.webhookEventFeed(of: merchant, after: after, limit: limit)
            guard let page, page.count < count else { return page }
            await Task.yield()
            try await Task.sleep(for: .milliseconds(50))
        }
        return try await store.webhookEventFeed(of: merchant, after: after, limit: limit)
    }

    @Test("pages a merchant's events in the order written, after a cursor, never another merchant's", arguments: Kind.enabled)
    func pages(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let written = try await Self.write(store, [Self.a, Self.b, Self.a, Self.a, Self.b, Self.a])
            let ofA = written.filter { $0.merchantIdentifier == Self.a }
            let first = try await Self.page(store, Self.a, after: nil, limit: 2, count: 2)
            #expect(first?.map(\.id) == ofA.prefix(2).map(\.id))
            #expect(first?.map(\.payload) == ofA.prefix(2).map(\.payload), "each event exactly its webhook body")
            let second = try await Self.page(store, Self.a, after: ofA[1].id, limit: 2, count: 2)
            #expect(second?.map(\.id) == ofA.suffix(2).map(\.id))
            #expect(try await store.webhookEventFeed(of: Self.a, after: ofA[3].id, limit: 2)?.isEmpty == true)
            let ofB = try await Self.page(store, Self.b, after: nil, count: 2)
            #expect(ofB?.map(\.id) == [written[1].id, written[4].id])

            // Another merchant's event, or none, is no cursor (nil, alike).
            #expect(try await store.webhookEventFeed(of: Self.a, after: written[1].id, limit: 50) == nil)
            #expect(try await store.webhookEventFeed(of: Self.a, after: "evt_" + String(repeating: "0", count: 32), limit: 50) == nil)

            // Delivered or not, an event stays in the feed; one written later comes after the cursor.
            let delivered = WebhookDeliveryResult(
                eventId: ofA[0].id, attempt: 0, state: .delivered, status: 200, error: nil, at: Self.at(10), nextAttemptAt: nil)
            #expect(try await store.recordDelivery(delivered))
            let later = try await Self.write(store, [Self.a], from: 6)
            let rest = try await Self.page(store, Self.a, after: ofA[3].id, count: 1)
            #expect(rest?.map(\.id) == later.map(\.id))
            #expect(try await Self.page(store, Self.a, after: nil, count: 5)?.map(\.id) == (ofA + later).map(\.id))
        }
    }

    @Test("a purged event leaves the feed, and as a cursor it is unknown", arguments: Kind.enabled)
    func purged(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let written = try await Self.write(store, [Self.a, Self.a, Self.a])
            let delivered = WebhookDeliveryResult(
                eventId: written[1].id, attempt: 0, state: .delivered, status: 200, error: nil, at: Self.at(10), nextAttemptAt: nil)
            #expect(try await store.recordDelivery(delivered))
            let counts = try await store.purge(before: PurgeCutoffs(deliveredWebhooks: Self.at(20)), limit: 10)
            #expect(counts.webhookEvents == 1)
            #expect(try await store.webhookEventFeed(of: Self.a, after: written[1].id, limit: 50) == nil)
            let left = try await Self.page(store, Self.a, after: nil, count: 2)
            #expect(left?.map(\.id) == [written[0].id, written[2].id])
            let after = try await Self.page(store, Self.a, after: written[0].id, count: 1)
            #expect(after?.map(\.id) == [written[2].id])
        }
    }
}
