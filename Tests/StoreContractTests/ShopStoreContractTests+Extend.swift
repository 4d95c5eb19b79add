import Foundation
import OrchardCore
import Testing

/// Extending a payment request: one compare-and-set on its order, the request's expiry with it.
extension ShopStoreContractTests {
    @Test(
        "extending moves an open or being-paid request's expiry forward, never back, and never revives or reopens one",
        arguments: Kind.enabled)
    func extendRequest(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            for id in ["open", "pending", "paid", "cancelled", "due"] {
                let (request, order) = try Self.request(id, key: "k-\(id)", expiresIn: id == "due" ? 60 : 600)
                _ = try await store.createPaymentRequest(request, order: order)
            }
            try await store.insert(try StoreContractTests.order("catalogue"))  // a checkout-page order: no request
            for id in ["pending", "paid"] { _ = try await store.claimPayment(Self.claim(id, payment: "p-\(id)")) }
            try #require(try await Self.move(store, "p-paid", of: "paid", .authorized) != nil)
            try #require(try await store.cancelOpenPaymentRequest(id: "cancelled", at: Self.at(1)))
            let before = try await Self.events(store).count

            #expect(try await store.extendPaymentRequest(id: "open", until: Self.at(5000), at: Self.at(100)))
            #expect(try await store.extendPaymentRequest(id: "pending", until: Self.at(5000), at: Self.at(100)))
            #expect(try await store.extendPaymentRequest(id: "open", until: Self.at(4000), at: Self.at(101)) == false, "never shortened")
            #expect(try await store.extendPaymentRequest(id: "open", until: Self.at(5000), at: Self.at(101)) == false, "the same again")
            for id in ["paid", "cancelled", "catalogue", "nothing"] {
                #expect(try await store.extendPaymentRequest(id: id, until: Self.at(5000), at: Self.at(100)) == false, "\(id)")
            }
            #expect(try await store.extendPaymentRequest(id: "due", until: Self.at(5000), at: Self.at(60)) == false, "past its expiry")

            for id in ["open", "pending"] {
                #expect(try await store.order(id: id)?.expiresAt == Self.at(5000), "\(id)")
                #expect(try await store.paymentRequest(id: id)?.expiresAt == Self.at(5000), "\(id)")
            }
            for id in ["paid", "cancelled"] { #expect(try await store.paymentRequest(id: id)?.expiresAt == Self.at(600), "\(id)") }
            #expect(try await store.order(id: "due")?.expiresAt == Self.at(60))
            #expect(
                try await store.expireOrders(at: Self.at(700), limit: 10) == ["due"],
                "an extended request does not expire at its first expiry")
            #expect(try await Self.events(store).count == before + 1, "only due's payment_request.expired")
        }
    }
}
