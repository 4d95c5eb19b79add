import Foundation
import OrchardCore
import Testing

/// The webhook outbox's contract: events written with the moves they report, leased when due,
/// delivered by compare-and-set, replayed.
extension ShopStoreContractTests {
    /// The events written after the first `count`, oldest first.
    static func newEvents(_ store: any OrchardStore, since count: Int) async throws -> [WebhookEvent] {
        Array(try await events(store).dropFirst(count))
    }

    /// Runs `change` and checks it wrote exactly the webhook `expected` (none when nil) about `payment`.
    static func expectEvent(
        _ store: any OrchardStore, _ expected: WebhookEventType?, payment: String, state: PaymentState,
        sourceLocation: SourceLocation = #_sourceLocation, _ change: () async throws -> PaymentRecord?
    ) async throws {
        let before = try await events(store).count
        let moved = try await change()
        #expect(moved?.state == state, "the move applied", sourceLocation: sourceLocation)
        let written = try await newEvents(store, since: before)
        #expect(written.map(\.type) == (expected.map { [$0] } ?? []), sourceLocation: sourceLocation)
        guard let event = written.first else { return }
        let data = try #require(try json(event)["data"] as? [String: Any], sourceLocation: sourceLocation)
        let view = data["payment"] as? [String: Any]
        #expect(view?["id"] as? String == payment && view?["state"] as? String == state.rawValue, sourceLocation: sourceLocation)
        #expect(event.merchantIdentifier == merchant && event.state == .pending && event.attempts == 0, sourceLocation: sourceLocation)
    }

    @Test(
        "each payment move with a webhook writes exactly one event of its type with it, none when it does not apply",
        arguments: Kind.enabled
    )
    func movesWriteEvents(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for order in ["o1", "o2", "o3", "o5"] { try await store.insert(try StoreContractTests.order(order)) }
            try await Self.expectEvent(store, nil, payment: "p1", state: .pending) {
                try await store.claimPayment(Self.claim("o1", payment: "p1"))
            }
            try await Self.expectEvent(store, .paymentAuthorized, payment: "p1", state: .authorized) {
                try await Self.move(store, "p1", of: "o1", .authorized, at: 1)
            }
            try await Self.expectEvent(store, .paymentSettled, payment: "p1", state: .settled) {
                try await Self.move(store, "p1", of: "o1", .settle, at: 2)
            }
            _ = try await store.claimPayment(Self.claim("o2", payment: "p2"))
            try await Self.expectEvent(store, .paymentRefused, payment: "p2", state: .refused) {
                try await Self.move(store, "p2", of: "o2", .declined, at: 3)
            }
            _ = try await store.claimPayment(Self.claim("o3", payment: "p3"))
            _ = try await Self.move(store, "p3", of: "o3", .authorized, at: 4)
            try await Self.expectEvent(store, .paymentCancelled, payment: "p3", state: .cancelled) {
                try await Self.move(store, "p3", of: "o3", .cancel, at: 5)
            }
            _ = try await store.claimPayment(Self.claim("o5", payment: "p5"))
            try await Self.expectEvent(store, .paymentRefused, payment: "p5", state: .failed) {
                try await Self.move(store, "p5", of: "o5", .rejected, at: 5)
            }

            // A move that finds another state writes nothing, nor does one whose order is elsewhere.
            let count = try await Self.events(store).count
            #expect(try await Self.move(store, "p1", of: "o1", .settle, at: 12) == nil)
            var move = PaymentLifecycle.move(.declined)
            _ = try await store.claimPayment(Self.claim("o2", payment: "p6", at: 12))
            move.order = (.open, .open)
            #expect(try await store.transition(PaymentTransition(paymentId: "p6", orderId: "o2", move: move, at: Self.at(12))) == nil)
            #expect(try await Self.events(store).count == count)
            #expect(try await store.payment(id: "p6")?.state == .pending)
        }
    }

    @Test(
        "unknown, re-sent by the shopper, unknown again, re-sent by the reconciler, stale: payment.unknown once, then the answer",
        arguments: Kind.enabled)
    func unknownOnce(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o4"))
            _ = try await store.claimPayment(Self.claim("o4", payment: "p4"))
            try await Self.expectEvent(store, .paymentUnknown, payment: "p4", state: .unknown) {
                try await Self.move(store, "p4", of: "o4", .noAnswer, at: 6)
            }
            try await Self.expectEvent(store, nil, payment: "p4", state: .pending) {
                var retry = Self.claim("o4", payment: "p4-retry", at: 7)
                retry.resending = "p4"
                return try await store.claimPayment(retry)
            }
            try await Self.expectEvent(store, nil, payment: "p4", state: .unknown) {
                try await Self.move(store, "p4", of: "o4", .noAnswer, at: 8)
            }
            try await Self.expectEvent(store, nil, payment: "p4", state: .pending) {
                try await Self.move(store, "p4", of: "o4", .resend, at: 9, reconcile: true)
            }
            try await Self.expectEvent(store, nil, payment: "p4", state: .unknown) {
                try await Self.move(store, "p4", of: "o4", .stale, at: 10)
            }
            try await Self.expectEvent(store, .paymentAuthorized, payment: "p4", state: .authorized) {
                try await Self.move(store, "p4", of: "o4", .resolvedAuthorized, at: 11)
            }
            #expect(try await Self.events(store).map(\.type) == [.paymentUnknown, .paymentAuthorized])
        }
    }

    @Test("a stale first send reports payment.unknown; an operator's refusal reports payment.refused", arguments: Kind.enabled)
    func staleAndResolved(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o1"))
            _ = try await store.claimPayment(Self.claim("o1", payment: "p1"))
            try await Self.expectEvent(store, .paymentUnknown, payment: "p1", state: .unknown) {
                try await Self.move(store, "p1", of: "o1", .stale, at: 1)
            }
            try await Self.expectEvent(store, .paymentRefused, payment: "p1", state: .refused) {
                try await Self.move(store, "p1", of: "o1", .resolvedRefused, at: 2)
            }
        }
    }

    /// Authorizes a new order of `merchant` at `seconds`: one payment.authorized event, due then.
    static func authorizedEvent(_ store: any OrchardStore, _ order: String, merchant: String = merchant, at seconds: Int) async throws
        -> WebhookEvent
    {
        var record = try StoreContractTests.order(order)
        record.merchantIdentifier = merchant
        try await store.insert(record)
        _ = try await store.claimPayment(claim(order, payment: "p-\(order)", at: seconds))
        _ = try #require(try await move(store, "p-\(order)", of: order, .authorized, at: seconds))
        let about = try await events(store).filter {
            ((try? json($0))?["data"] as? [String: Any]).flatMap { $0["payment"] as? [String: Any] }?["id"] as? String == "p-\(order)"
        }
        #expect(about.count == 1)
        let event = try #require(about.first)
        #expect(event.type == .paymentAuthorized && event.nextAttemptAt == at(seconds) && event.createdAt == at(seconds))
        return event
    }

    static func result(
        _ event: WebhookEvent, attempt: Int? = nil, _ state: WebhookEvent.DeliveryState, status: Int?, at seconds: Int, next: Int? = nil
    ) -> WebhookDeliveryResult {
        WebhookDeliveryResult(
            eventId: event.id, attempt: attempt ?? event.attempts, state: state, status: status,
            error: state == .delivered ? nil : "HTTP \(status ?? 0)", at: at(seconds), nextAttemptAt: next.map(at))
    }

    /// Leases the events due at `seconds` for a minute.
    static func lease(_ store: any OrchardStore, at seconds: Int, limit: Int = 10) async throws -> [String] {
        try await store.leaseWebhookEvents(at: at(seconds), until: at(seconds + 60), limit: limit).map(\.id)
    }

    @Test(
        "leased events: pending ones whose next attempt has come, oldest first, each out of sight until its lease ends",
        arguments: Kind.enabled)
    func due(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let late = try await Self.authorizedEvent(store, "o1", at: 10)
            let early = try await Self.authorizedEvent(store, "o2", at: 5)
            let third = try await Self.authorizedEvent(store, "o3", at: 20)
            #expect(try await Self.lease(store, at: 4).isEmpty)
            #expect(try await Self.lease(store, at: 7) == [early.id])
            #expect(try await store.webhookEvent(id: early.id)?.nextAttemptAt == Self.at(67), "its next attempt is the lease's end")
            #expect(try await Self.lease(store, at: 30, limit: 1) == [late.id], "the leased one is passed by")
            #expect(try await Self.lease(store, at: 30) == [third.id])
            #expect(try await Self.lease(store, at: 66).isEmpty)
            #expect(try await Self.lease(store, at: 67) == [early.id], "an expired lease is handed out again")
            let listed = try await store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 10).map(\.id)
            #expect(listed == [third.id, late.id, early.id], "listed newest first, whatever order they were written in")

            #expect(try await store.recordDelivery(Self.result(early, .delivered, status: 204, at: 30)))
            #expect(try await store.recordDelivery(Self.result(late, .pending, status: 500, at: 30, next: 200)))
            #expect(try await store.recordDelivery(Self.result(third, .failed, status: 500, at: 30)))
            #expect(try await Self.lease(store, at: 199).isEmpty, "delivered, failed and retried later, whatever the leases said")
            #expect(try await Self.lease(store, at: 200) == [late.id])
            #expect(try await Self.lease(store, at: 86_400 * 30).map { $0 } == [late.id])
        }
    }

    @Test(
        "skipped by merchant: every due pending event of the merchants named, in one call; leased, later and other merchants' untouched",
        arguments: Kind.enabled)
    func skippedByMerchant(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let due = try await Self.authorizedEvent(store, "a1", at: 5)
            let leased = try await Self.authorizedEvent(store, "a2", at: 6)
            let later = try await Self.authorizedEvent(store, "a3", at: 100)
            let delivered = try await Self.authorizedEvent(store, "a4", at: 7)
            let other = try await Self.authorizedEvent(store, "b1", merchant: Self.otherMerchant, at: 5)
            #expect(try await store.recordDelivery(Self.result(delivered, .delivered, status: 204, at: 8)))
            #expect(
                try await store.leaseWebhookEvents(
                    at: Self.at(6), until: Self.at(66), fairly: WebhookLease(merchants: 1, perMerchant: 2, excluding: [Self.otherMerchant])
                ).map(\.id) == [due.id, leased.id])
            // The lease of `due` ended at 66 too: only events due at `date` are skipped, so
            // skipping at 10 takes none of the leased ones; at 70, both of this merchant's.
            #expect(try await store.skipWebhookEvents(of: [Self.merchant], at: Self.at(10), reason: "no endpoint") == 0)
            #expect(try await store.skipWebhookEvents(of: [], at: Self.at(70), reason: "no endpoint") == 0)
            #expect(
                try await store.skipWebhookEvents(of: [Self.merchant, "merchant.unknown"], at: Self.at(70), reason: "no endpoint") == 2)
            for id in [due.id, leased.id] {
                let event = try #require(try await store.webhookEvent(id: id))
                #expect(event.state == .skipped && event.attempts == 1 && event.lastError == "no endpoint" && event.nextAttemptAt == nil)
                #expect(event.lastStatus == nil && event.deliveredAt == nil)
            }
            #expect(try await store.webhookEvent(id: later.id)?.state == .pending, "due at 100, not yet")
            #expect(try await store.webhookEvent(id: delivered.id)?.state == .delivered)
            let untouched = try await store.webhookEvent(id: other.id)
            #expect(untouched?.state == .pending && untouched?.attempts == 0)
        }
    }

    @Test(
        "a fair lease: each merchant's oldest few, merchants by their oldest due event, a busy merchant left out",
        arguments: Kind.enabled)
    func fairLease(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            // A backlog for one merchant, older than everything another one has.
            var backlog: [String] = []
            for index in 0..<6 { backlog.append(try await Self.authorizedEvent(store, "a\(index)", at: index).id) }
            let other = try await Self.authorizedEvent(store, "b0", merchant: Self.otherMerchant, at: 10).id
            let third = "merchant.third"
            let last = try await Self.authorizedEvent(store, "c0", merchant: third, at: 11).id
            func lease(_ fairly: WebhookLease, at seconds: Int = 20) async throws -> [String] {
                try await store.leaseWebhookEvents(at: Self.at(seconds), until: Self.at(seconds + 60), fairly: fairly).map(\.id)
            }
            #expect(
                try await lease(WebhookLease(merchants: 2, perMerchant: 2)) == Array(backlog.prefix(2)) + [other],
                "the backlog's merchant gets its two oldest, the next merchant its own; the third waits for a free slot")
            #expect(try await lease(WebhookLease(merchants: 5, perMerchant: 2, excluding: [Self.merchant])) == [last])
            #expect(
                try await lease(WebhookLease(merchants: 5, perMerchant: 3, total: 2)) == Array(backlog[2..<4]),
                "the total bounds the lease, oldest first")
            #expect(try await lease(WebhookLease(merchants: 5, perMerchant: 5)) == Array(backlog[4...]))
            #expect(try await lease(WebhookLease(merchants: 5, perMerchant: 5)).isEmpty, "all leased")
            #expect(
                try await lease(WebhookLease(merchants: 5, perMerchant: 5), at: 80).count == 7,
                "every lease ran out: five of the backlog, one each of the others")
        }
    }

    @Test("recordDelivery is a compare-and-set on (pending, attempts)", arguments: Kind.enabled)
    func recordDelivery(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let event = try await Self.authorizedEvent(store, "o1", at: 0)
            #expect(try await store.recordDelivery(Self.result(event, attempt: 1, .delivered, status: 200, at: 1)) == false)
            #expect(try await store.recordDelivery(Self.result(event, .pending, status: 503, at: 1, next: 31)))
            #expect(try await store.recordDelivery(Self.result(event, .pending, status: 503, at: 2, next: 32)) == false, "same count")
            let retried = try #require(try await store.webhookEvent(id: event.id))
            #expect(retried.state == .pending && retried.attempts == 1 && retried.lastStatus == 503 && retried.lastError == "HTTP 503")
            #expect(retried.nextAttemptAt == Self.at(31) && retried.deliveredAt == nil)

            #expect(try await store.recordDelivery(Self.result(retried, .delivered, status: 204, at: 40)))
            #expect(try await store.recordDelivery(Self.result(retried, .delivered, status: 204, at: 41)) == false)
            let delivered = try #require(try await store.webhookEvent(id: event.id))
            #expect(delivered.state == .delivered && delivered.attempts == 2 && delivered.lastStatus == 204)
            #expect(delivered.deliveredAt == Self.at(40) && delivered.nextAttemptAt == nil && delivered.lastError == nil)
            #expect(delivered.payload == event.payload, "the body is never rewritten")
            #expect(try await store.recordDelivery(Self.result(delivered, .pending, status: 500, at: 42, next: 50)) == false, "not pending")
            var unknown = event
            unknown.id = "evt_none"
            #expect(try await store.recordDelivery(Self.result(unknown, .delivered, status: 200, at: 42)) == false)
        }
    }

    @Test("replay makes any event pending and due again, its attempts kept; false for an unknown ID", arguments: Kind.enabled)
    func replay(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let event = try await Self.authorizedEvent(store, "o1", at: 0)
            #expect(try await store.recordDelivery(Self.result(event, .delivered, status: 200, at: 1)))
            #expect(try await store.replayWebhookEvent(id: event.id, at: Self.at(100)))
            let replayed = try #require(try await store.webhookEvent(id: event.id))
            #expect(replayed.state == .pending && replayed.nextAttemptAt == Self.at(100) && replayed.attempts == 1)
            #expect(try await Self.lease(store, at: 99).isEmpty)
            #expect(try await Self.lease(store, at: 100) == [event.id])
            #expect(try await store.recordDelivery(Self.result(replayed, .failed, status: 410, at: 101)))
            #expect(try await store.replayWebhookEvent(id: event.id, at: Self.at(200)), "a failed event too")
            #expect(try await store.webhookEvent(id: event.id)?.state == .pending)
            #expect(try await store.replayWebhookEvent(id: "evt_none", at: Self.at(200)) == false)
        }
    }

    @Test("listing filters by merchant and delivery state, newest first, up to the limit", arguments: Kind.enabled)
    func listing(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let a1 = try await Self.authorizedEvent(store, "a1", at: 1)
            let b1 = try await Self.authorizedEvent(store, "b1", merchant: Self.otherMerchant, at: 2)
            let a2 = try await Self.authorizedEvent(store, "a2", at: 3)
            let b2 = try await Self.authorizedEvent(store, "b2", merchant: Self.otherMerchant, at: 4)
            #expect(try await store.recordDelivery(Self.result(a1, .delivered, status: 200, at: 5)))
            #expect(try await store.recordDelivery(Self.result(b2, .delivered, status: 200, at: 5)))

            func list(_ merchant: String?, _ state: WebhookEvent.DeliveryState?, limit: Int = 10) async throws -> [String] {
                try await store.webhookEvents(merchantIdentifier: merchant, state: state, limit: limit).map(\.id)
            }
            #expect(try await list(nil, nil) == [b2.id, a2.id, b1.id, a1.id])
            #expect(try await list(nil, nil, limit: 2) == [b2.id, a2.id])
            #expect(try await list(Self.merchant, nil) == [a2.id, a1.id])
            #expect(try await list(Self.otherMerchant, nil) == [b2.id, b1.id])
            #expect(try await list(nil, .delivered) == [b2.id, a1.id])
            #expect(try await list(Self.merchant, .pending) == [a2.id])
            #expect(try await list(Self.otherMerchant, .failed).isEmpty)
            #expect(try await list("merchant.none", nil).isEmpty)
            #expect(try await store.webhookEvent(id: b1.id)?.merchantIdentifier == Self.otherMerchant)
        }
    }
}
