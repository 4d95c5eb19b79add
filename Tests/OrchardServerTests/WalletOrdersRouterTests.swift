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
import WalletOrders

/// Wallet orders through the router: the page's authorize answer carries `orderDetails`; Wallet's
/// calls under the web service's path fetch, register and list; the shop posts a fulfilment.
@Suite("Wallet orders, through the router")
struct WalletOrdersRouterTests {
    static func withWalletOrders(_ body: (RouterHarness) async throws -> Void) async throws {
        try await RouterHarness.with(
            configure: { configuration in
                configuration.merchants[0].walletOrders = try TestWalletOrders.settings()
            }, body)
    }

    /// Pays a new order on the page; the answer's `orderDetails`.
    static func pay(_ server: RouterHarness) async throws -> [String: String] {
        let (id, request) = try await PageCheckout.createOrder(server)
        let paid = try await server.send(
            "POST", "/api/apple-pay/authorize", body: try PageCheckout.paymentBody(orderId: id, request: request, amount: 990))
        #expect(paid.status == 200, "\(String(decoding: paid.body, as: UTF8.self))")
        return try #require(paid.json?["orderDetails"] as? [String: String])
    }

    static func wallet(
        _ server: RouterHarness, _ method: String, _ path: String, token: String?, body: String? = nil, headers: [(String, String)] = []
    ) async throws -> CurlResponse {
        var extra = token.map { [(name: "Authorization", value: "AppleOrder \($0)")] } ?? []
        extra += headers.map { (name: $0.0, value: $0.1) }
        return try await server.send(
            method, "/wallet-orders/v1" + path, host: "pay.shop.example", body: body.map { Array($0.utf8) }, extraHeaders: extra)
    }

    @Test(
        "authorize answers orderDetails; Wallet fetches the signed package, registers, lists; 304 with Last-Modified; 401 alike for a wrong token or another order"
    )
    func playWallet() async throws {
        try await Self.withWalletOrders { server in
            let details = try await Self.pay(server)
            #expect(details["orderTypeIdentifier"] == TestWalletOrders.orderType)
            #expect(details["webServiceURL"] == "https://pay.shop.example/wallet-orders")
            let (type, id, token) = (
                try #require(details["orderTypeIdentifier"]), try #require(details["orderIdentifier"]),
                try #require(details["authenticationToken"])
            )

            let fetched = try await Self.wallet(server, "GET", "/orders/\(type)/\(id)", token: token)
            #expect(fetched.status == 200)
            #expect(fetched.header("content-type") == "application/vnd.apple.finance.order")
            let lastModified = try #require(fetched.header("last-modified"))
            let files = try #require(StoredZip.entries(of: fetched.body)).map(\.path)
            #expect(files == ["order.json", "logo.png", "manifest.json", "signature"])

            for wrong in [nil, "nope-nope-nope-nope", token + "x"] {
                #expect(try await Self.wallet(server, "GET", "/orders/\(type)/\(id)", token: wrong).status == 401)
            }
            #expect(try await Self.wallet(server, "GET", "/orders/\(type)/\(RecordIdentifier.random())", token: token).status == 401)
            #expect(try await Self.wallet(server, "GET", "/orders/order.other/\(id)", token: token).status == 401)

            let notModified = try await Self.wallet(
                server, "GET", "/orders/\(type)/\(id)", token: token, headers: [("If-Modified-Since", lastModified)])
            #expect(notModified.status == 304 && notModified.body.isEmpty)

            let pushToken = String(repeating: "0f", count: 32)
            let registration = "/devices/device-1/registrations/\(type)/\(id)"
            #expect(
                try await Self.wallet(server, "POST", registration, token: token, body: #"{"pushToken":"\#(pushToken)"}"#).status == 201)
            #expect(
                try await Self.wallet(server, "POST", registration, token: token, body: #"{"pushToken":"\#(pushToken)"}"#).status == 200)
            #expect(
                try await Self.wallet(server, "POST", registration, token: "wrong-token-wrong", body: #"{"pushToken":"\#(pushToken)"}"#)
                    .status == 401)
            let listed = try await Self.wallet(server, "GET", "/devices/device-1/registrations/\(type)", token: nil)
            #expect(listed.status == 200 && listed.json?["orderIdentifiers"] as? [String] == [id])
            let tag = try #require(listed.json?["lastModified"] as? String)
            #expect(
                try await Self.wallet(server, "GET", "/devices/device-1/registrations/\(type)?ordersModifiedSince=\(tag)", token: nil)
                    .status == 204)
            #expect(try await Self.wallet(server, "POST", "/log", token: nil, body: #"{"logs":["a line from Wallet"]}"#).status == 200)
            #expect(try await Self.wallet(server, "DELETE", registration, token: token).status == 200)
            #expect(try await Self.wallet(server, "GET", "/devices/device-1/registrations/\(type)", token: nil).status == 204)
        }
    }

    @Test("the shop posts a fulfilment: a new version Wallet fetches past its old Last-Modified; another merchant's key finds nothing")
    func fulfilment() async throws {
        try await RouterHarness.with(
            secondMerchant: true,
            configure: { configuration in
                configuration.merchants[0].walletOrders = try TestWalletOrders.settings()
            }
        ) { server in
            let details = try await Self.pay(server)
            let (type, id, token) = (
                try #require(details["orderTypeIdentifier"]), try #require(details["orderIdentifier"]),
                try #require(details["authenticationToken"])
            )
            let first = try await Self.wallet(server, "GET", "/orders/\(type)/\(id)", token: token)
            let lastModified = try #require(first.header("last-modified"))
            let record = try #require(try await server.store.walletOrder(orderTypeIdentifier: type, orderIdentifier: id))

            let key = try await server.apiKey()
            let body =
                #"{"fulfillmentIdentifier":"parcel-1","type":"shipping","status":"onTheWay","carrier":"DHL","trackingNumber":"123","trackingURL":"https://carrier.example/t/123","estimatedDeliveryAt":"2030-01-02T10:00:00Z"}"#
            let posted = try await server.api("POST", "/v1/payments/\(record.paymentId)/fulfillments", key: key, json: body)
            #expect(posted.status == 200, "\(String(decoding: posted.body, as: UTF8.self))")
            #expect(posted.json?["version"] as? Int == 2)
            let read = try await server.api("GET", "/v1/payments/\(record.paymentId)/wallet-order", key: key)
            #expect((read.json?["fulfillments"] as? [[String: Any]])?.first?["trackingNumber"] as? String == "123")

            let other = try await server.apiKey(for: TestMaterial.secondMerchantIdentifier)
            #expect(try await server.api("POST", "/v1/payments/\(record.paymentId)/fulfillments", key: other, json: body).status == 404)
            #expect(try await server.api("GET", "/v1/payments/\(record.paymentId)/wallet-order", key: other).status == 404)
            let bad = try await server.api(
                "POST", "/v1/payments/\(record.paymentId)/fulfillments", key: key,
                json: #"{"fulfillmentIdentifier":"p","type":"pickup","status":"onTheWay"}"#)
            #expect(bad.status == 400 && bad.errorCode == "invalid_request")

            let again = try await Self.wallet(
                server, "GET", "/orders/\(type)/\(id)", token: token, headers: [("If-Modified-Since", lastModified)])
            #expect(again.status == 200, "changed since: the whole package again")
            let order = try WalletOrderJSON.decode(try #require(StoredZip.entries(of: again.body)?.first { $0.path == "order.json" }).bytes)
            #expect(order.fulfillments?.first?.carrier == "DHL" && order.updatedAt > order.createdAt)
            let events = try await server.store.webhookEvents(merchantIdentifier: TestMaterial.merchantIdentifier, state: nil, limit: 10)
            #expect(events.first?.type == .walletOrderUpdated)
        }
    }

    @Test("a capture and a full refund are each a new version: Wallet then reads the payment paid, then refunded and the order cancelled")
    func followsThePayment() async throws {
        try await Self.withWalletOrders { server in
            let details = try await Self.pay(server)
            let (type, id, token) = (
                try #require(details["orderTypeIdentifier"]), try #require(details["orderIdentifier"]),
                try #require(details["authenticationToken"])
            )
            let record = try #require(try await server.store.walletOrder(orderTypeIdentifier: type, orderIdentifier: id))
            let key = try await server.apiKey()
            #expect(try await server.api("POST", "/v1/payments/\(record.paymentId)/capture", key: key).status == 200)
            let afterCapture = try #require(try await server.store.walletOrder(paymentId: record.paymentId))
            #expect(afterCapture.version == 2)
            let refund = try await server.api(
                "POST", "/v1/payments/\(record.paymentId)/refunds", key: key, json: "{}", idempotencyKey: "all")
            #expect(refund.status == 201)
            #expect(try await server.store.walletOrder(paymentId: record.paymentId)?.version == 3)
            let fetched = try await Self.wallet(server, "GET", "/orders/\(type)/\(id)", token: token)
            let order = try WalletOrderJSON.decode(
                try #require(StoredZip.entries(of: fetched.body)?.first { $0.path == "order.json" }).bytes)
            #expect(order.status == .cancelled && order.payment?.status == .refunded)
            #expect(order.payment?.transactions?.map(\.transactionType) == [.purchase, .refund])
            #expect(order.payment?.transactions?.first?.status == .completed)
        }
    }

    @Test("a merchant without Wallet orders: no orderDetails, no web service")
    func off() async throws {
        try await RouterHarness.with { server in
            let (id, request) = try await PageCheckout.createOrder(server)
            let paid = try await server.send(
                "POST", "/api/apple-pay/authorize", body: try PageCheckout.paymentBody(orderId: id, request: request, amount: 990))
            #expect(paid.status == 200 && paid.json?["orderDetails"] == nil)
            #expect(try await Self.wallet(server, "POST", "/log", token: nil, body: #"{"logs":[]}"#).status == 404)
        }
    }
}
