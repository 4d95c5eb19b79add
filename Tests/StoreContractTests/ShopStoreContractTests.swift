import ApplePay
import Foundation
import OrchardCore
import Testing

/// The payments API's store contract (API keys, payment requests, expiry, refunds and the
/// webhook outbox), run against SQLite, the in-memory store and PostgreSQL alike.
@Suite("Shop store contract: SQLite, in memory and PostgreSQL")
struct ShopStoreContractTests {
    typealias Kind = StoreContractTests.Kind
    static let merchant = "merchant.test"
    static let otherMerchant = "merchant.other"

    /// `seconds` after the contract tests' fixed now (whole seconds: SQLite keeps no less).
    static func at(_ seconds: Int) -> Date { StoreContractTests.now.addingTimeInterval(TimeInterval(seconds)) }

    static func storeError(_ body: () async throws -> Void) async -> CoreError.Code? {
        await StoreContractTests.storeError(body)
    }

    /// A payment request of `merchant` and its open order, expiring `expiresIn` seconds after now.
    static func request(
        _ id: String, merchant: String = merchant, key: String, fingerprint: [UInt8] = [1, 1], expiresIn: Int = 600
    ) throws -> (PaymentRequestRecord, OrderRecord) {
        var order = try StoreContractTests.order(id)
        order.merchantIdentifier = merchant
        order.expiresAt = at(expiresIn)
        let record = PaymentRequestRecord(
            id: id, merchantIdentifier: merchant, reference: "shop-\(id)", metadata: ["cart": "c-\(id)"],
            cart: ShopCart(currency: "EUR", countryCode: "FR", amount: 990), idempotencyKey: key, fingerprint: fingerprint,
            expiresAt: at(expiresIn), createdAt: at(0))
        return (record, order)
    }

    /// The contract tests' claim of a 9.90 EUR payment, made `seconds` after now.
    static func claim(_ order: String, payment: String, at seconds: Int = 0) -> PaymentClaim {
        var claim = StoreContractTests.claim(order, transaction: "t-\(payment)-\(seconds)", payment: payment)
        claim.draft.createdAt = at(seconds)
        claim.draft.updatedAt = at(seconds)
        return claim
    }

    /// One move of the lifecycle, as the engine and the reconciler make it.
    @discardableResult
    static func move(
        _ store: any OrchardStore, _ payment: String, of order: String, _ event: PaymentLifecycle.Event, at seconds: Int = 0,
        reconcile: Bool = false
    ) async throws -> PaymentRecord? {
        try await store.transition(
            PaymentTransition(
                paymentId: payment, orderId: order, move: PaymentLifecycle.move(event), at: at(seconds),
                countsReconcileAttempt: reconcile))
    }

    /// A settled payment of 9.90 EUR: an order claimed, authorized, then settled.
    static func settled(_ store: any OrchardStore, order: String = "o1", payment: String = "p1") async throws -> PaymentRecord {
        try await store.insert(try StoreContractTests.order(order))
        _ = try await store.claimPayment(claim(order, payment: payment))
        _ = try #require(try await move(store, payment, of: order, .authorized))
        return try #require(try await move(store, payment, of: order, .settle))
    }

    /// A refund's draft; `sends`: how often the engine saw an unknown refund of the same key sent.
    static func refund(_ payment: String, _ amount: Int64, key: String, at seconds: Int = 0, sends: Int = 1) -> RefundRecord {
        RefundRecord(
            id: "re_" + RecordIdentifier.random(), paymentId: payment, amount: amount, currency: "EUR", state: .pending, reference: "",
            idempotencyKey: key, sends: sends, createdAt: at(seconds), lastSentAt: at(seconds))
    }

    /// Every event, oldest first.
    static func events(_ store: any OrchardStore) async throws -> [WebhookEvent] {
        try await store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 1000).reversed()
    }

    static func json(_ event: WebhookEvent) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(event.payload)) as? [String: Any])
    }

    // MARK: API keys

    @Test("API keys: two active at most, revoking frees a slot, a revoked key or a wrong secret never matches", arguments: Kind.enabled)
    func apiKeys(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (first, firstSecret) = APIKeyRecord.generate(merchantIdentifier: Self.merchant, at: Self.at(0))
            let (second, secondSecret) = APIKeyRecord.generate(merchantIdentifier: Self.merchant, at: Self.at(1))
            let (third, _) = APIKeyRecord.generate(merchantIdentifier: Self.merchant, at: Self.at(2))
            try await store.insertAPIKey(first)
            try await store.insertAPIKey(second)
            #expect(await Self.storeError { try await store.insertAPIKey(third) } == .limitReached)
            #expect(try await store.apiKey(id: third.id) == nil, "a refused key is not stored")
            let (other, _) = APIKeyRecord.generate(merchantIdentifier: Self.otherMerchant, at: Self.at(3))
            try await store.insertAPIKey(other)  // another merchant's keys count apart

            #expect(APIKeyRecord.keyId(ofSecret: firstSecret) == first.id, "the secret names its key")
            #expect(try await store.revokeAPIKey(id: first.id, at: Self.at(10)))
            #expect(try await store.revokeAPIKey(id: first.id, at: Self.at(11)) == false, "already revoked")
            #expect(try await store.revokeAPIKey(id: "key_0000000000000000", at: Self.at(11)) == false, "no such key")
            try await store.insertAPIKey(third)
            #expect(
                await Self.storeError {
                    try await store.insertAPIKey(APIKeyRecord.generate(merchantIdentifier: Self.merchant, at: Self.at(12)).record)
                } == .limitReached)

            let revoked = try #require(try await store.apiKey(id: first.id))
            #expect(revoked.revokedAt == Self.at(10) && revoked.secretHash == APIKeyRecord.hash(firstSecret))
            #expect(!revoked.matches(firstSecret), "a revoked key never matches")
            let live = try #require(try await store.apiKey(id: second.id))
            #expect(live.matches(secondSecret))
            #expect(!live.matches(firstSecret) && !live.matches(secondSecret + "A") && !live.matches(String(secondSecret.dropLast())))
            #expect(try await store.apiKeys(merchantIdentifier: Self.merchant).map(\.id) == [first.id, second.id, third.id])
            #expect(
                try await store.apiKeys(merchantIdentifier: nil).map(\.id) == [other.id, first.id, second.id, third.id],
                "every merchant's keys, by merchant, oldest first")
            #expect(try await store.apiKeys(merchantIdentifier: "merchant.none").isEmpty)
        }
    }

    @Test("a secret's key ID is read only from a secret's shape: osk_key_<16 hex>_<43 base64url>")
    func keyIdParsing() {
        let (record, secret) = APIKeyRecord.generate(merchantIdentifier: Self.merchant, at: Self.at(0))
        #expect(APIKeyRecord.keyId(ofSecret: secret) == record.id)
        #expect(secret.hasPrefix("osk_key_") && secret.utf8.count == 68)
        let hex = String(record.id.dropFirst(4))
        let tail = String(secret.suffix(43))
        let malformed = [
            "", "osk", "osk_", "osk_key_", "osk_\(record.id)", "osk_\(record.id)_", "sk_\(record.id)_\(tail)", "OSK_\(record.id)_\(tail)",
            "osk_kez_\(hex)_\(tail)", "osk_key_\(hex.dropLast())_\(tail)", "osk_key_\(hex)0_\(tail)", "osk_key_\(hex.uppercased())_\(tail)",
            "osk_key_zzzzzzzzzzzzzzzz_\(tail)", "osk_key_\(hex)_\(tail.dropLast())", "osk_key_\(hex)_\(tail)A",
            "osk_key_\(hex)_\(tail.dropLast())+", "osk_key_\(hex)_\(tail.dropLast())=",
            "osk_key_\(hex)_" + String(repeating: "A", count: 200),
            " \(secret)", "\(secret)\n",
        ]
        for bad in malformed {
            #expect(APIKeyRecord.keyId(ofSecret: bad) == nil, "\(bad)")
        }
    }

    // MARK: Payment requests

    @Test("a payment request is created with its open order once per merchant and Idempotency-Key", arguments: Kind.enabled)
    func paymentRequests(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (request, order) = try Self.request("r1", key: "k1", fingerprint: [1, 2, 3])
            let created = try await store.createPaymentRequest(request, order: order)
            #expect(created.created && created.record == request)
            #expect(try await store.paymentRequest(id: "r1") == request)
            let stored = try #require(try await store.order(id: "r1"))
            #expect(stored.state == .open && stored.expiresAt == Self.at(600) && stored.merchantIdentifier == Self.merchant)

            let (retry, retryOrder) = try Self.request("r2", key: "k1", fingerprint: [1, 2, 3])
            let again = try await store.createPaymentRequest(retry, order: retryOrder)
            #expect(!again.created && again.record == request, "the same key and body: the first request")
            #expect(try await store.order(id: "r2") == nil, "and no second order")
            #expect(try await store.paymentRequest(id: "r2") == nil)

            let (changed, changedOrder) = try Self.request("r3", key: "k1", fingerprint: [9])
            #expect(
                await Self.storeError { _ = try await store.createPaymentRequest(changed, order: changedOrder) } == .idempotencyMismatch)
            #expect(try await store.order(id: "r3") == nil)

            let (other, otherOrder) = try Self.request("r4", merchant: Self.otherMerchant, key: "k1", fingerprint: [9])
            let separate = try await store.createPaymentRequest(other, order: otherOrder)
            #expect(separate.created && separate.record.id == "r4", "another merchant's key is its own")
            #expect(try await store.order(id: "r4")?.merchantIdentifier == Self.otherMerchant)
            #expect(try await store.paymentRequest(id: "r1") == request, "the first merchant's request is untouched")
        }
    }

    // MARK: Expiry

    @Test("expiry closes only open orders past their expiry, each with one payment_request.expired event", arguments: Kind.enabled)
    func expiry(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for (id, expiresIn) in [("late", 60), ("edge", 120), ("future", 600), ("paid", 60), ("pending", 60), ("unknown", 60)] {
                let (request, order) = try Self.request(id, key: "k-\(id)", expiresIn: expiresIn)
                _ = try await store.createPaymentRequest(request, order: order)
            }
            try await store.insert(try StoreContractTests.order("catalogue"))  // no expiry at all
            for id in ["paid", "pending", "unknown"] {
                _ = try await store.claimPayment(Self.claim(id, payment: "p-\(id)"))
            }
            try #require(try await Self.move(store, "p-paid", of: "paid", .authorized) != nil)
            try #require(try await Self.move(store, "p-unknown", of: "unknown", .noAnswer) != nil)
            let before = try await Self.events(store).count

            #expect(try await store.expireOrders(at: Self.at(59), limit: 100).isEmpty, "nothing is past its expiry yet")
            let first = try await store.expireOrders(at: Self.at(120), limit: 1)
            let rest = try await store.expireOrders(at: Self.at(120), limit: 100)
            #expect(first.count == 1 && Set(first + rest) == ["late", "edge"], "the limit holds and the rest follow")
            #expect(try await store.expireOrders(at: Self.at(120), limit: 100).isEmpty, "a second call finds nothing")
            let states = try await ["late", "edge", "future", "paid", "pending", "unknown", "catalogue"].asyncMap {
                try await store.order(id: $0)?.state
            }
            #expect(states == [.expired, .expired, .open, .paid, .pending, .unknown, .open])

            let expired = try await Self.events(store).dropFirst(before)
            #expect(expired.map(\.type) == [.paymentRequestExpired, .paymentRequestExpired])
            let requests = try expired.map { try ((Self.json($0)["data"] as? [String: Any])?["paymentRequest"] as? [String: Any]) }
            #expect(Set(requests.compactMap { $0?["id"] as? String }) == ["late", "edge"])
            #expect(Set(requests.compactMap { $0?["reference"] as? String }) == ["shop-late", "shop-edge"])
            #expect(expired.allSatisfy { $0.merchantIdentifier == Self.merchant && $0.state == .pending })
        }
    }

    @Test(
        "withdrawing moves only an open request's order to cancelled, with one payment_request.cancelled event; a claim then loses",
        arguments: Kind.enabled)
    func cancelOpen(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for id in ["open", "pending", "paid"] {
                let (request, order) = try Self.request(id, key: "k-\(id)", expiresIn: 600)
                _ = try await store.createPaymentRequest(request, order: order)
            }
            try await store.insert(try StoreContractTests.order("catalogue"))  // a checkout-page order: no request to withdraw
            for id in ["pending", "paid"] { _ = try await store.claimPayment(Self.claim(id, payment: "p-\(id)")) }
            try #require(try await Self.move(store, "p-paid", of: "paid", .authorized) != nil)
            let before = try await Self.events(store).count

            #expect(try await store.cancelOpenPaymentRequest(id: "open", at: Self.at(10)))
            #expect(try await store.cancelOpenPaymentRequest(id: "open", at: Self.at(11)) == false, "a second call moves nothing")
            for id in ["pending", "paid", "catalogue", "nothing"] {
                #expect(try await store.cancelOpenPaymentRequest(id: id, at: Self.at(12)) == false, "\(id)")
            }
            let states = try await ["open", "pending", "paid", "catalogue"].asyncMap { try await store.order(id: $0)?.state }
            #expect(states == [.cancelled, .pending, .paid, .open])
            let events = try await Self.events(store).dropFirst(before)
            #expect(events.map(\.type) == [.paymentRequestCancelled])
            let request = try events.first.map { try (Self.json($0)["data"] as? [String: Any])?["paymentRequest"] as? [String: Any] }
            #expect(request??["id"] as? String == "open")
            await #expect(throws: CoreError.self) { _ = try await store.claimPayment(Self.claim("open", payment: "p-late")) }
        }
    }

    @Test("a claim on an open order past its expiry is orderNotOpen and changes nothing", arguments: Kind.enabled)
    func claimAfterExpiry(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let (request, order) = try Self.request("r1", key: "k1", expiresIn: 60)
            _ = try await store.createPaymentRequest(request, order: order)
            let late = Self.claim("r1", payment: "p1", at: 60)
            #expect(await Self.storeError { _ = try await store.claimPayment(late) } == .orderNotOpen)
            #expect(try await store.order(id: "r1")?.state == .open)
            #expect(try await store.payments(orderId: "r1").isEmpty)
            try await store.insert(try StoreContractTests.order("o2"))
            var reused = late
            reused.draft.orderId = "o2"
            #expect(try await store.claimPayment(reused).orderId == "o2", "the refused claim did not use up its transaction")
            let inTime = try await store.claimPayment(Self.claim("r1", payment: "p2", at: 59))
            #expect(inTime.state == .pending && inTime.reference == "r1-1", "a second before its expiry the order takes a payment")
        }
    }

    // MARK: Refunds

    @Test("refunds: only of a settled payment, within what pending, refunded and unknown refunds leave", arguments: Kind.enabled)
    func refundLimits(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await store.insert(try StoreContractTests.order("o1"))
            _ = try await store.claimPayment(Self.claim("o1", payment: "p1"))
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 100, key: "a")) } == .invalidState)
            try #require(try await Self.move(store, "p1", of: "o1", .authorized) != nil)
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 100, key: "a")) } == .invalidState)
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("nope", 100, key: "a")) } == .invalidState)
            #expect(try await store.refunds(paymentId: "p1").isEmpty, "a refused claim stores nothing")
            try #require(try await Self.move(store, "p1", of: "o1", .settle) != nil)

            let first = try await store.claimRefund(Self.refund("p1", 400, key: "a"))
            #expect(first.state == .pending && first.sends == 1 && first.reference == "o1-1-r1")
            _ = try #require(try await store.finishRefund(id: first.id, state: .refunded, outcome: nil, at: Self.at(1)))
            let second = try await store.claimRefund(Self.refund("p1", 300, key: "b"))
            #expect(second.reference == "o1-1-r2")
            _ = try #require(try await store.finishRefund(id: second.id, state: .refunded, outcome: nil, at: Self.at(2)))
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 291, key: "c")) } == .refundTooLarge)

            let refused = try await store.claimRefund(Self.refund("p1", 290, key: "d"))
            #expect(
                await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 1, key: "e")) } == .refundTooLarge,
                "a pending refund holds its amount")
            _ = try #require(try await store.finishRefund(id: refused.id, state: .refused, outcome: nil, at: Self.at(3)))
            let unknown = try await store.claimRefund(Self.refund("p1", 290, key: "f"))
            #expect(unknown.reference == "o1-1-r4", "a refused refund frees its amount")
            _ = try #require(try await store.finishRefund(id: unknown.id, state: .unknown, outcome: nil, at: Self.at(4)))
            #expect(
                await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 1, key: "g")) } == .refundTooLarge,
                "an unknown refund holds its amount")
            let all = try await store.refunds(paymentId: "p1")
            #expect(all.map(\.state) == [.refunded, .refunded, .refused, .unknown])
            #expect(all.map(\.amount) == [400, 300, 290, 290])
        }
    }

    @Test("a repeated refund Idempotency-Key: the same refund, an unknown one re-sent under its reference", arguments: Kind.enabled)
    func refundIdempotency(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.settled(store)
            let refunded = try await store.claimRefund(Self.refund("p1", 100, key: "a"))
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 100, key: "a")) } == .paymentInProgress)
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 200, key: "a")) } == .idempotencyMismatch)
            let done = try #require(try await store.finishRefund(id: refunded.id, state: .refunded, outcome: nil, at: Self.at(1)))
            #expect(try await store.claimRefund(Self.refund("p1", 100, key: "a", at: 5)) == done, "refunded: the same refund")
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 200, key: "a")) } == .idempotencyMismatch)

            let refused = try await store.claimRefund(Self.refund("p1", 100, key: "b"))
            let no = try #require(try await store.finishRefund(id: refused.id, state: .refused, outcome: nil, at: Self.at(1)))
            #expect(try await store.claimRefund(Self.refund("p1", 100, key: "b", at: 5)) == no, "refused: the same refund")

            let unknown = try await store.claimRefund(Self.refund("p1", 100, key: "c"))
            _ = try #require(try await store.finishRefund(id: unknown.id, state: .unknown, outcome: nil, at: Self.at(1)))
            let resent = try await store.claimRefund(Self.refund("p1", 100, key: "c", at: 7))
            #expect(resent.id == unknown.id && resent.reference == unknown.reference && resent.reference == "o1-1-r3")
            #expect(resent.state == .pending && resent.sends == 2 && resent.updatedAt == Self.at(7))
            #expect(try await store.refunds(paymentId: "p1").last == resent, "the store holds what the claim returned")
            #expect(await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 100, key: "c")) } == .paymentInProgress)
            _ = try #require(try await store.finishRefund(id: unknown.id, state: .unknown, outcome: nil, at: Self.at(8)))
            #expect(
                await Self.storeError { _ = try await store.claimRefund(Self.refund("p1", 100, key: "c", at: 9)) } == .paymentInProgress,
                "a re-send decided on one send finds two: sent again meanwhile")
            let third = try await store.claimRefund(Self.refund("p1", 100, key: "c", at: 9, sends: 2))
            #expect(third.sends == 3 && third.reference == "o1-1-r3" && third.lastSentAt == Self.at(9))
            #expect(try await store.refunds(paymentId: "p1").count == 3, "repeats add no refund")
        }
    }

    @Test(
        "finishRefund moves only a pending refund; refunded writes one payment.refunded event, refused one payment.refund_refused",
        arguments: Kind.enabled)
    func finishRefund(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.settled(store)
            let before = try await Self.events(store).count
            let first = try await store.claimRefund(Self.refund("p1", 400, key: "a"))
            let outcome = RefundOutcome(status: .refunded, processorReference: "psp-r1")
            let finished = try #require(try await store.finishRefund(id: first.id, state: .refunded, outcome: outcome, at: Self.at(3)))
            #expect(finished.state == .refunded && finished.processorReference == "psp-r1" && finished.updatedAt == Self.at(3))
            #expect(try await store.finishRefund(id: first.id, state: .refunded, outcome: outcome, at: Self.at(4)) == nil)
            #expect(try await store.finishRefund(id: first.id, state: .refused, outcome: nil, at: Self.at(4)) == nil)
            #expect(try await store.finishRefund(id: "re_none", state: .refunded, outcome: nil, at: Self.at(4)) == nil)

            let events = try await Self.events(store).dropFirst(before)
            #expect(events.map(\.type) == [.paymentRefunded], "one event, for the refunded finish only")
            let event = try #require(events.first)
            let json = try Self.json(event)
            #expect(json["id"] as? String == event.id && json["type"] as? String == "payment.refunded")
            let data = try #require(json["data"] as? [String: Any])
            #expect((data["refund"] as? [String: Any])?["amount"] as? Int == 400)
            #expect((data["refund"] as? [String: Any])?["id"] as? String == first.id)
            #expect((data["payment"] as? [String: Any])?["amountRefunded"] as? Int == 400)
            #expect((data["payment"] as? [String: Any])?["id"] as? String == "p1")

            let refused = try await store.claimRefund(Self.refund("p1", 100, key: "b"))
            _ = try #require(try await store.finishRefund(id: refused.id, state: .refused, outcome: nil, at: Self.at(5)))
            let second = try await store.claimRefund(Self.refund("p1", 200, key: "c"))
            _ = try #require(try await store.finishRefund(id: second.id, state: .refunded, outcome: nil, at: Self.at(6)))
            let after = try await Self.events(store).dropFirst(before)
            #expect(after.map(\.type) == [.paymentRefunded, .paymentRefundRefused, .paymentRefunded])
            let refusal = try #require(try Self.json(after[after.startIndex + 1])["data"] as? [String: Any])
            #expect((refusal["refund"] as? [String: Any])?["state"] as? String == "refused")
            #expect((refusal["refund"] as? [String: Any])?["id"] as? String == refused.id)
            let last = try #require(after.last)
            let total = try #require(try Self.json(last)["data"] as? [String: Any])
            #expect((total["payment"] as? [String: Any])?["amountRefunded"] as? Int == 600, "refunded refunds only, this one included")
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var result: [T] = []
        for element in self { result.append(try await transform(element)) }
        return result
    }
}
