import ApplePay
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing
import WalletOrders

/// A test that plays Wallet against a live server: it pays on the page, takes `orderDetails`,
/// fetches the package over HTTP and checks it with tools apart from Orchard's (openssl, Python's
/// zipfile, hashlib and jsonschema), registers a device, has the shop post a fulfilment, sees the
/// push reach a mock APNs over HTTP/2 and mutual TLS, and fetches the new package (304 for the new
/// Last-Modified).
@Suite("Wallet orders, live: the server, a mock APNs and Wallet played by the test", .timeLimit(.minutes(2)))
struct WalletOrdersLiveTests {
    static func section(apnsPort: Int) -> ConfigurationFile.WalletOrders {
        var section = ConfigurationFile.WalletOrders(
            orderTypeIdentifier: TestWalletOrders.orderType, identityCertificate: "order.pem", identityKey: "order.key",
            intermediateCertificate: "wwdr.pem", webServiceURL: "http://127.0.0.1/wallet-orders", url: "https://shop.example",
            orderManagementURL: "https://shop.example/orders/{orderNumber}")
        section.apns = .init(baseURL: "https://127.0.0.1:\(apnsPort)", caFile: "ca.pem", allowNonAppleHost: true)
        return section
    }

    func wallet(_ server: ServerHarness, _ method: String, _ path: String, token: String?, body: String? = nil, since: String? = nil)
        async throws -> CurlResponse
    {
        var headers = token.map { [(name: "Authorization", value: "AppleOrder \($0)")] } ?? []
        if let since { headers.append((name: "If-Modified-Since", value: since)) }
        return try await server.send(
            method, "/wallet-orders/v1" + path, host: "127.0.0.1", body: body.map { Array($0.utf8) }, extraHeaders: headers)
    }

    @Test("pay, fetch and verify the package, register, ship: the push reaches APNs and Wallet fetches the new version")
    func playWallet() async throws {
        let pki = TestMaterial.shared.pki
        let apns = try MockAPNs(server: try pki.issueServerCertificate(hosts: ["127.0.0.1"]), clientCA: pki.ca.certificate)
        try await apns.serving { apnsPort in try await play(apns: apns, apnsPort: apnsPort) }
    }

    func play(apns: MockAPNs, apnsPort: Int) async throws {
        let pki = TestMaterial.shared.pki
        try await ServerHarness.with(
            transport: .live,
            configure: { file, directory in
                let issued = try TestWalletOrders.issued()
                try issued.leaf.write(certificateTo: directory.path("order.pem"), keyTo: directory.path("order.key"))
                try directory.write("wwdr.pem", Array(try issued.intermediate.certificatePEM.utf8))
                file.merchants[0].walletOrders = Self.section(apnsPort: apnsPort)
            }
        ) { server in
            let (orderId, request) = try await PageCheckout.createOrder(server)
            let paid = try await server.send(
                "POST", "/api/apple-pay/authorize", body: try PageCheckout.paymentBody(orderId: orderId, request: request, amount: 990))
            let details = try #require(paid.json?["orderDetails"] as? [String: String], "\(String(decoding: paid.body, as: UTF8.self))")
            let paymentId = try #require(paid.json?["paymentId"] as? String)
            let (type, id, token) = (
                try #require(details["orderTypeIdentifier"]), try #require(details["orderIdentifier"]),
                try #require(details["authenticationToken"])
            )
            #expect(details["webServiceURL"] == "http://127.0.0.1/wallet-orders")

            let first = try await wallet(server, "GET", "/orders/\(type)/\(id)", token: token)
            #expect(first.status == 200 && first.header("content-type") == "application/vnd.apple.finance.order")
            let lastModified = try #require(first.header("last-modified"))
            let checked = try await WalletOrderPackageCheck.check(first.body, ca: pki.ca.certificate, loopbackWebService: true)
            #expect(checked.status == 0, "\(checked.stderr)")
            #expect(checked.names == ["order.json", "manifest.json", "signature"])
            let order = try WalletOrderJSON.decode(Array(checked.orderJSON.utf8))
            #expect(order.payment?.total.amount == "9.90" && order.authenticationToken == token && order.status == .open)

            #expect(try await wallet(server, "GET", "/orders/\(type)/\(id)", token: "0123456789abcdef-wrong").status == 401)
            let pushToken = String(repeating: "5a", count: 32)
            let registered = try await wallet(
                server, "POST", "/devices/iphone-1/registrations/\(type)/\(id)", token: token, body: #"{"pushToken":"\#(pushToken)"}"#)
            #expect(registered.status == 201)
            #expect(try await wallet(server, "GET", "/devices/unknown-device/registrations/\(type)", token: nil).status == 204)

            let key = try await server.apiKey()
            let shipped = try await server.api(
                "POST", "/v1/payments/\(paymentId)/fulfillments", key: key,
                json:
                    #"{"fulfillmentIdentifier":"parcel-1","type":"shipping","status":"onTheWay","carrier":"DHL","trackingNumber":"00340434161094042557"}"#
            )
            #expect(shipped.status == 200, "\(String(decoding: shipped.body, as: UTF8.self))")

            let pushes = await apns.waitForPushes(1)
            #expect(pushes.first?.token == pushToken && pushes.first?.topic == type && pushes.first?.overHTTP2 == true)
            let listed = try await wallet(server, "GET", "/devices/iphone-1/registrations/\(type)", token: nil)
            #expect(listed.json?["orderIdentifiers"] as? [String] == [id])

            let newer = try await wallet(server, "GET", "/orders/\(type)/\(id)", token: token, since: lastModified)
            #expect(newer.status == 200, "changed since the first fetch")
            let shippedOrder = try WalletOrderJSON.decode(
                try #require(StoredZip.entries(of: newer.body)?.first { $0.path == "order.json" }).bytes)
            #expect(shippedOrder.fulfillments?.first?.trackingNumber == "00340434161094042557")
            let unchanged = try await wallet(server, "GET", "/orders/\(type)/\(id)", token: token, since: newer.header("last-modified"))
            #expect(unchanged.status == 304)
        }
    }
}
