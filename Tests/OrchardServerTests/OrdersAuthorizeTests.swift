import ApplePay
import Crypto
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

@Suite("Orders and the authorize endpoint, through the router")
struct OrdersAuthorizeTests {
    let minter = PageCheckout.minter

    func createOrder(_ server: some ServerRequests, items: String = PageCheckout.twoApples) async throws -> (
        id: String, request: [String: Any]
    ) {
        try await PageCheckout.createOrder(server, items: items)
    }

    func paymentBody(orderId: String, request: [String: Any], amount: Int, currency: String = "978", applicationData: String? = nil)
        throws -> [UInt8]
    {
        try PageCheckout.paymentBody(
            orderId: orderId, request: request, amount: amount, currency: currency, applicationData: applicationData)
    }

    func paymentBody(orderId: String, token: PaymentData) throws -> [UInt8] {
        try PageCheckout.paymentBody(orderId: orderId, token: token)
    }

    @Test("an order's payment request is priced by the server")
    func createOrderTotals() async throws {
        try await RouterHarness.with { server in
            let (_, request) = try await createOrder(server)
            #expect((request["total"] as? [String: Any])?["amount"] as? String == "9.90")  // 2 × 2.50 + 4.90
            #expect(request["merchantCapabilities"] as? [String] == ["supports3DS"])
            #expect(request["currencyCode"] as? String == "EUR")
            #expect((request["lineItems"] as? [[String: Any]])?.count == 2)
            let bad = try await server.send("POST", "/api/orders", body: Array(#"{"items": [{"productId": "kiwi", "quantity": 1}]}"#.utf8))
            #expect(bad.status == 400)
            #expect(bad.errorCode == "invalid_cart")
        }
    }

    @Test("shipping contact, shipping method and coupon updates recompute totals or return Apple Pay errors")
    func updates() async throws {
        try await RouterHarness.with { server in
            let (id, _) = try await createOrder(server)
            let unserviceable = try await server.send(
                "POST", "/api/orders/\(id)/shipping-contact", body: Array(#"{"countryCode": "US"}"#.utf8))
            #expect(unserviceable.status == 200)
            #expect((unserviceable.json?["errors"] as? [[String: Any]])?.first?["code"] as? String == "addressUnserviceable")
            #expect((unserviceable.json?["newTotal"] as? [String: Any])?["amount"] as? String == "9.90")

            let france = try await server.send("POST", "/api/orders/\(id)/shipping-contact", body: Array(#"{"countryCode": "FR"}"#.utf8))
            #expect((france.json?["newShippingMethods"] as? [[String: Any]])?.count == 2)
            let express = try await server.send(
                "POST", "/api/orders/\(id)/shipping-method", body: Array(#"{"identifier": "express"}"#.utf8))
            #expect((express.json?["newTotal"] as? [String: Any])?["amount"] as? String == "14.90")
            let coupon = try await server.send("POST", "/api/orders/\(id)/coupon", body: Array(#"{"couponCode": "ten"}"#.utf8))
            #expect((coupon.json?["newTotal"] as? [String: Any])?["amount"] as? String == "14.40")  // 5.00 − 0.50 + 9.90
            let expired = try await server.send("POST", "/api/orders/\(id)/coupon", body: Array(#"{"couponCode": "OLD"}"#.utf8))
            #expect((expired.json?["errors"] as? [[String: Any]])?.first?["code"] as? String == "couponCodeExpired")
            #expect((expired.json?["newTotal"] as? [String: Any])?["amount"] as? String == "14.90")
            let stored = try #require(try await server.store.order(id: id))
            #expect(stored.priced.total == 1490)

            let elsewhere = try await server.send(
                "POST", "/api/orders/\(id)/coupon", host: "evil.test", body: Array(#"{"couponCode": "TEN"}"#.utf8))
            #expect(elsewhere.status == 421)
            let unknown = try await server.send("POST", "/api/orders/nope/coupon", body: Array(#"{"couponCode": "TEN"}"#.utf8))
            #expect(unknown.status == 404)
        }
    }

    @Test("a token for the order's total is authorized once; the payment is stored without card data")
    func authorizeOnce() async throws {
        try await RouterHarness.with { server in
            let (id, request) = try await createOrder(server)
            let body = try paymentBody(orderId: id, request: request, amount: 990)
            let response = try await server.send("POST", "/api/apple-pay/authorize", body: body)
            #expect(response.status == 200)
            #expect(response.json?["status"] as? String == "success")
            #expect((response.json?["errors"] as? [Any])?.isEmpty == true)

            let order = try #require(try await server.store.order(id: id))
            #expect(order.state == .paid)
            let payments = try await server.store.payments(orderId: id)
            #expect(payments.count == 1)
            #expect(payments.first?.state == .authorized)
            #expect(payments.first?.processor == "record")
            #expect(payments.first?.reference == "\(id)-1")
            #expect(payments.first?.amount == 990)
            #expect(payments.first?.lastFour == "1111")
            #expect(payments.first?.network == "Visa")

            let replay = try await server.send("POST", "/api/apple-pay/authorize", body: body)
            #expect(replay.status == 409)
            #expect(replay.json?["status"] as? String == "failure")
            #expect((replay.json?["errors"] as? [[String: Any]])?.isEmpty == false)
        }
    }

    @Test("a tampered total, a foreign order binding or an untrusted token fails and nothing is paid")
    func mismatches() async throws {
        try await RouterHarness.with { server in
            let (id, request) = try await createOrder(server)
            let cheaper = try await server.send(
                "POST", "/api/apple-pay/authorize", body: try paymentBody(orderId: id, request: request, amount: 1))
            #expect(cheaper.status == 422)
            #expect(cheaper.json?["status"] as? String == "failure")
            let dollars = try await server.send(
                "POST", "/api/apple-pay/authorize", body: try paymentBody(orderId: id, request: request, amount: 990, currency: "840"))
            #expect(dollars.status == 422)
            let otherOrder = try await server.send(
                "POST", "/api/apple-pay/authorize",
                body: try paymentBody(
                    orderId: id, request: request, amount: 990, applicationData: Data("orchard-order:other".utf8).base64EncodedString()))
            #expect(otherOrder.status == 422)

            let untrusted = try TokenMinter(chain: TestAppleChain.make()).mintEC(
                payload: TokenMinter.samplePayload(amount: 990), to: RouterHarness.processingKey.publicKey,
                merchantIdentifier: TestMaterial.merchantIdentifier,
                applicationDataHash: Array(SHA256.hash(data: Data(base64Encoded: request["applicationData"] as! String)!)))
            let refused = try await server.send("POST", "/api/apple-pay/authorize", body: try paymentBody(orderId: id, token: untrusted))
            #expect(refused.status == 400)
            #expect(refused.errorCode == "invalid_token")

            #expect(try await server.store.order(id: id)?.state == .open)
            #expect(try await server.store.payments(orderId: id).isEmpty)
        }
    }

    @Test("the same token submitted concurrently 50 times yields exactly one success")
    func concurrentReplays() async throws {
        // 50 attempts from one address: far past a shopper's rate, which is not what this is about
        // (the router harness sets no limits).
        try await RouterHarness.with { server in
            let (id, request) = try await createOrder(server)
            let body = try paymentBody(orderId: id, request: request, amount: 990)
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask { try await server.send("POST", "/api/apple-pay/authorize", body: body).status }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(statuses.filter { $0 == 409 }.count == 49)
            #expect(try await server.store.payments(orderId: id).count == 1)
        }
    }

    @Test("an unknown order is 404 and a body over 64 KB is 413, both shaped for completePayment")
    func unknownOrderAndOversized() async throws {
        try await RouterHarness.with { server in
            let (_, request) = try await createOrder(server)
            let unknown = try await server.send(
                "POST", "/api/apple-pay/authorize", body: try paymentBody(orderId: "0123456789abcdef", request: request, amount: 990))
            #expect(unknown.status == 404)
            #expect(unknown.json?["status"] as? String == "failure")
            let huge =
                Array(#"{"orderId": "x", "payment": {"pad": ""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 70_000)
                + Array(#""}}"#.utf8)
            let oversized = try await server.send("POST", "/api/apple-pay/authorize", body: huge)
            #expect(oversized.status == 413)
            #expect(oversized.json?["status"] as? String == "failure")
        }
    }

    @Test("malformed authorize bodies are 400 with a completePayment-shaped answer")
    func malformed() async throws {
        try await RouterHarness.with { server in
            for body in ["{}", "[]", #"{"orderId": "x", "payment": {}}"#, "garbage"] {
                let response = try await server.send("POST", "/api/apple-pay/authorize", body: Array(body.utf8))
                #expect(response.status == 400, "\(body)")
                #expect(response.json?["status"] as? String == "failure")
            }
        }
    }
}
