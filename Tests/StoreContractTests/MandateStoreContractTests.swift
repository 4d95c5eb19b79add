import ApplePay
import Foundation
import OrchardCore
import Testing

/// Mandates in the store: created only by the move that authorizes their first payment, then
/// ended or updated by compare-and-set, each change with its webhook event; on every store.
@Suite("Mandate store contract: SQLite, in memory and PostgreSQL")
struct MandateStoreContractTests {
    typealias Kind = StoreContractTests.Kind
    typealias Shop = ShopStoreContractTests

    static let metadata = DecryptedPayment.MerchantTokenMetadata(
        cardArt: [.init(name: "front", type: "image/png", url: "https://art.example/front.png")],
        cardMetadata: .init(cardCountry: "FR", expirationDate: "20301231", fpanSuffix: "4242", shortDescription: "Visa"))

    static func mandate(_ id: String, payment: String, order: String, token: String?, merchant: String = Shop.merchant) -> MandateRecord {
        MandateRecord(
            id: id, merchantIdentifier: merchant, kind: .recurring, paymentId: payment, orderId: order, processor: "record",
            credential: StoredCredential(reference: "tok-\(id)", schemeReference: "scheme-\(id)"), merchantTokenIdentifier: token,
            merchantTokenMetadata: metadata, currency: "EUR", network: "visa", lastFour: "1111", description: "Coffee club, monthly",
            createdAt: Shop.at(5))
    }

    /// An order claimed with a merchant token and authorized with `mandate`; returns the payment.
    static func authorizeFirst(_ store: any OrchardStore, order: String, payment: String, mandate: MandateRecord?) async throws
        -> PaymentRecord?
    {
        var first = try StoreContractTests.order(order)
        first.merchantIdentifier = mandate?.merchantIdentifier ?? Shop.merchant
        try await store.insert(first)
        var claim = Shop.claim(order, payment: payment)
        claim.draft.merchantTokenIdentifier = "mtid-\(payment)"
        claim.draft.merchantTokenMetadata = metadata
        _ = try await store.claimPayment(claim)
        return try await store.transition(
            PaymentTransition(
                paymentId: payment, orderId: order, move: PaymentLifecycle.move(.authorized), at: Shop.at(5),
                outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-\(payment)"), mandate: mandate))
    }

    @Test(
        "the authorizing move creates the mandate, names it on the payment and reports both; a move that loses creates none",
        arguments: Kind.enabled)
    func creation(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let created = Self.mandate("mdt_1", payment: "p1", order: "o1", token: "mtid-p1")
            let payment = try #require(try await Self.authorizeFirst(store, order: "o1", payment: "p1", mandate: created))
            #expect(payment.mandateId == "mdt_1")
            let stored = try #require(try await store.payment(id: "p1"))
            #expect(stored.mandateId == "mdt_1" && stored.merchantTokenIdentifier == "mtid-p1")
            #expect(stored.merchantTokenMetadata == Self.metadata, "the card details come back as stored")
            #expect(try await store.mandate(id: "mdt_1") == created)

            let events = try await Shop.events(store)
            #expect(events.map(\.type) == [.paymentAuthorized, .mandateCreated])
            let authorized = try Shop.json(events[0])
            let data = try #require(authorized["data"] as? [String: Any])
            #expect((data["payment"] as? [String: Any])?["mandateId"] as? String == "mdt_1", "the payment's event names its mandate")
            let mandateEvent = try #require(try Shop.json(events[1])["data"] as? [String: Any])
            let view = try #require(mandateEvent["mandate"] as? [String: Any])
            #expect(view["id"] as? String == "mdt_1" && view["state"] as? String == "active" && view["type"] as? String == "recurring")
            #expect(
                view["credential"] == nil && !String(decoding: events[1].payload, as: UTF8.self).contains("tok-mdt_1"),
                "the processor's stored-credential reference never leaves Orchard")

            // The same move again finds the payment authorized: it loses, and no second mandate appears.
            let again = try await store.transition(
                PaymentTransition(
                    paymentId: "p1", orderId: "o1", move: PaymentLifecycle.move(.authorized), at: Shop.at(6),
                    mandate: Self.mandate("mdt_2", payment: "p1", order: "o1", token: "mtid-p1")))
            #expect(again == nil)
            #expect(try await store.mandate(id: "mdt_2") == nil)
            #expect(try await Shop.events(store).count == 2)
        }
    }

    @Test(
        "ending and updating are compare-and-sets on active, each with its event; lookups keep to the merchant",
        arguments: Kind.enabled)
    func endAndUpdate(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            _ = try await Self.authorizeFirst(
                store, order: "o1", payment: "p1", mandate: Self.mandate("mdt_1", payment: "p1", order: "o1", token: "tok-a"))
            _ = try await Self.authorizeFirst(
                store, order: "o2", payment: "p2",
                mandate: Self.mandate("mdt_2", payment: "p2", order: "o2", token: "tok-a", merchant: Shop.otherMerchant))
            #expect(try await store.mandates(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-a").map(\.id) == ["mdt_1"])
            #expect(try await store.mandates(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-b").isEmpty)

            var changed = Self.metadata
            changed.cardMetadata?.fpanSuffix = "0005"
            let updated = try #require(try await store.updateMandate(id: "mdt_1", metadata: changed, merchantToken: nil, at: Shop.at(20)))
            #expect(updated.merchantTokenMetadata == changed && updated.updatedAt == Shop.at(20) && updated.state == .active)

            let ended = try #require(try await store.endMandate(id: "mdt_1", reason: "apple:user", at: Shop.at(30)))
            #expect(ended.state == .ended && ended.endedReason == "apple:user" && ended.endedAt == Shop.at(30))
            #expect(try await store.endMandate(id: "mdt_1", reason: "shop", at: Shop.at(31)) == nil, "already ended")
            #expect(
                try await store.updateMandate(id: "mdt_1", metadata: nil, merchantToken: nil, at: Shop.at(32)) == nil,
                "an ended mandate stays as it ended")
            #expect(try await store.endMandate(id: "mdt_none", reason: "shop", at: Shop.at(31)) == nil)
            let reread = try #require(try await store.mandate(id: "mdt_1"))
            #expect(reread.endedReason == "apple:user" && reread.merchantTokenMetadata == changed)

            #expect(try await store.mandates(merchantIdentifier: Shop.merchant, state: .active, limit: 10).isEmpty)
            #expect(try await store.mandates(merchantIdentifier: Shop.merchant, state: .ended, limit: 10).map(\.id) == ["mdt_1"])
            #expect(try await store.mandates(merchantIdentifier: Shop.otherMerchant, state: nil, limit: 10).map(\.id) == ["mdt_2"])
            let mine = try await store.webhookEvents(merchantIdentifier: Shop.merchant, state: nil, limit: 50).map(\.type)
            #expect(Array(mine.reversed()) == [.paymentAuthorized, .mandateCreated, .mandateUpdated, .mandateEnded])
        }
    }

    /// The MPAN details a verified token event gave, with a signing time off whole seconds: the
    /// stores keep them as given (JSON), not rounded as their own timestamps are.
    static let merchantToken = MerchantTokenDetails(
        expirationDate: "301231", expirationMonth: 12, expirationYear: 2030, suffix: "7840", mpanId: "MPAN-2.b_c",
        signedAt: Shop.at(14).addingTimeInterval(0.25), updatedAt: Shop.at(20))

    @Test(
        "a card update sets the MPAN details and the card details in one compare-and-set on active, with mandate.updated showing them",
        arguments: Kind.enabled)
    func cardUpdate(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let created = Self.mandate("mdt_1", payment: "p1", order: "o1", token: "tok-a")
            _ = try await Self.authorizeFirst(store, order: "o1", payment: "p1", mandate: created)
            #expect(try await store.mandate(id: "mdt_1")?.merchantToken == nil, "none until Apple tells one")

            let updated = try #require(
                try await store.updateMandate(id: "mdt_1", metadata: Self.metadata, merchantToken: Self.merchantToken, at: Shop.at(20)))
            #expect(updated.merchantToken == Self.merchantToken && updated.merchantTokenMetadata == Self.metadata)
            #expect(updated.updatedAt == Shop.at(20) && updated.state == .active && updated.lastFour == created.lastFour)
            #expect(try await store.mandate(id: "mdt_1") == updated, "read back as written")
            #expect(
                try await store.mandates(merchantIdentifier: Shop.merchant, merchantTokenIdentifier: "tok-a").first?.merchantToken
                    == Self.merchantToken)

            let events = try await Shop.events(store)
            #expect(events.map(\.type) == [.paymentAuthorized, .mandateCreated, .mandateUpdated])
            let data = try #require(try Shop.json(events[2])["data"] as? [String: Any])
            let shown = try #require((data["mandate"] as? [String: Any])?["merchantToken"] as? [String: Any])
            #expect(shown["expirationDate"] as? String == "301231" && shown["suffix"] as? String == "7840")
            #expect(
                shown["expirationMonth"] as? Int == 12 && shown["expirationYear"] as? Int == 2030
                    && shown["mpanId"] as? String == "MPAN-2.b_c")

            // Given nil, it is cleared: the store writes what Core decided, and Core keeps what it keeps.
            let cleared = try #require(try await store.updateMandate(id: "mdt_1", metadata: nil, merchantToken: nil, at: Shop.at(21)))
            #expect(cleared.merchantToken == nil && cleared.merchantTokenMetadata == nil)
            _ = try await store.endMandate(id: "mdt_1", reason: "shop", at: Shop.at(22))
            #expect(
                try await store.updateMandate(id: "mdt_1", metadata: nil, merchantToken: Self.merchantToken, at: Shop.at(23)) == nil,
                "an ended mandate takes no card update")
            #expect(try await store.mandate(id: "mdt_1")?.merchantToken == nil)
            #expect(try await Shop.events(store).map(\.type).filter { $0 == .mandateUpdated }.count == 2)
        }
    }
}
