import ApplePay
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardInMemory
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The price race as a racing shopper would run it, through the router: an authorize and a switch to
/// a dearer shipping method for the same order, sent together. Whichever lands first, a payment
/// is never for another total than the order's.
@Suite("Authorize and a repricing sent together, through the router")
struct PriceRaceHTTPTests {
    @Test("30 orders: exactly one of the two wins each, and an authorized payment is always the order's total")
    func race() async throws {
        let orders = PageCheckout.self
        // The router harness sets no rate limits: 60 calls from one address are not what this is about.
        try await RouterHarness.with { server in
            var outcomes: [String: Int] = [:]
            for _ in 0..<30 {
                let (id, request) = try await orders.createOrder(server)
                let body = try orders.paymentBody(orderId: id, request: request, amount: 990)
                async let paid = server.send("POST", "/api/apple-pay/authorize", body: body)
                async let repriced = server.send(
                    "POST", "/api/orders/\(id)/shipping-method", body: Array(#"{"identifier": "express"}"#.utf8))
                let (payment, update) = try await (paid, repriced)
                let stored = try #require(try await server.store.order(id: id))
                let authorized = try await server.store.payments(orderId: id).filter { $0.state == .authorized }
                switch (payment.status, update.status) {
                case (200, 409):
                    #expect(update.errorCode == "order_not_open")
                    #expect(authorized.map(\.amount) == [990] && stored.priced.total == 990 && stored.priceVersion == 1)
                case (409, 200), (422, 200):
                    #expect(["order_changed", "payment_mismatch"].contains(payment.errorCode ?? ""), "\(payment.errorCode ?? "")")
                    #expect(authorized.isEmpty && stored.state == .open && stored.priced.total == 1490 && stored.priceVersion == 2)
                default:
                    Issue.record("order \(id): authorize \(payment.status) \(payment.errorCode ?? ""), repricing \(update.status)")
                }
                outcomes["\(payment.status)/\(update.status) \(payment.errorCode ?? "")", default: 0] += 1
            }
            // Which side won varies with scheduling; the invariants above hold for every order.
            #expect(outcomes.values.reduce(0, +) == 30, "\(outcomes)")
        }
    }
}
