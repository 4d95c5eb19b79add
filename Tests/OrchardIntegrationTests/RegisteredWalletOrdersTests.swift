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

/// A merchant a platform integrator registered has Wallet orders: the admin API takes its Order
/// Type ID identity as PEM text (sealed at rest), its payments answer `orderDetails`, and Wallet's
/// calls under `/wallet-orders` find its orders. No device is registered: nothing is pushed to Apple.
@Suite("Registered merchants' Wallet orders")
struct RegisteredWalletOrdersTests {
    static let partner = "tea-house"
    static let domain = "tea-house.example"

    func admin(_ server: ServerHarness, _ method: String, _ path: String, _ body: [String: Any]? = nil) async throws -> CurlResponse {
        let bytes = try body.map { Array(try JSONSerialization.data(withJSONObject: $0)) }
        return try await server.send(method, path, body: bytes, extraHeaders: MoreMerchants.authorization)
    }

    static func walletOrders(displayName: String? = "Tea House") throws -> [String: Any] {
        let issued = try TestWalletOrders.issued()
        var section: [String: Any] = [
            "orderTypeIdentifier": TestWalletOrders.orderType, "identityCertificate": try issued.leaf.certificatePEM,
            "identityKey": try issued.leaf.keyPEM, "intermediateCertificate": try issued.intermediate.certificatePEM,
            "webServiceURL": "https://pay.platform.example/wallet-orders", "url": "https://tea-house.example",
            "orderManagementURL": "https://tea-house.example/orders/{orderNumber}",
            "logo": "data:image/png;base64," + Data(TestWalletOrders.logo).base64EncodedString(),
        ]
        section["displayName"] = displayName
        return section
    }

    @Test("set through the admin API, sealed; the partner's payment answers orderDetails and Wallet fetches its package; refusals")
    func registeredMerchant() async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SETTINGS_KEY": String(repeating: "5d", count: 32)]) { $1 },
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
            }
        ) { server in
            for (partner, domain) in [(Self.partner, Self.domain), ("coffee-house", "coffee-house.example")] {
                let registered = try await admin(
                    server, "POST", "/admin/merchants",
                    ["partnerInternalMerchantIdentifier": partner, "partnerMerchantName": partner, "domainNames": [domain]])
                #expect(registered.status == 201)
            }
            var pkcs12 = try Self.walletOrders()
            pkcs12["identity"] = ["pkcs12": "not-binary"]
            let refused = try await admin(server, "PUT", "/admin/merchants/\(Self.partner)/settings", ["walletOrders": pkcs12])
            #expect(refused.status == 400 && refused.errorMessage?.contains("give identityCertificate and identityKey as PEM") == true)
            let unnamed = try await admin(
                server, "PUT", "/admin/merchants/\(Self.partner)/settings", ["walletOrders": try Self.walletOrders(displayName: nil)])
            #expect(unnamed.status == 400 && unnamed.errorMessage?.contains("walletOrders.displayName is required") == true)

            let set = try await admin(server, "PUT", "/admin/merchants/\(Self.partner)/settings", ["walletOrders": try Self.walletOrders()])
            #expect(set.status == 200, "\(String(decoding: set.body, as: UTF8.self))")
            #expect(set.json?["orderTypeIdentifier"] as? String == TestWalletOrders.orderType)
            let sealed = try #require(try await server.store.sealedMerchantSettings()[Self.partner])
            #expect(!String(decoding: sealed, as: UTF8.self).contains("PRIVATE KEY"), "the key is sealed, not stored in clear")
            let taken = try await admin(server, "PUT", "/admin/merchants/coffee-house/settings", ["walletOrders": try Self.walletOrders()])
            #expect(taken.status == 409 && taken.errorCode == "identifier_taken", "one order type, one merchant")

            let keyAnswer = try await admin(server, "POST", "/admin/merchants/\(Self.partner)/api-keys")
            let key = try #require(keyAnswer.json?["secret"] as? String)
            let paid = try await RegisteredMerchantPaymentTests.pay(server, key: key, domain: Self.domain, reference: "tea-1")
            #expect(paid.status == 200)
            let details = try #require(paid.json?["orderDetails"] as? [String: String], "\(String(decoding: paid.body, as: UTF8.self))")
            #expect(details["webServiceURL"] == "https://pay.platform.example/wallet-orders")
            let (type, id, token) = (
                try #require(details["orderTypeIdentifier"]), try #require(details["orderIdentifier"]),
                try #require(details["authenticationToken"])
            )
            let fetched = try await server.send(
                "GET", "/wallet-orders/v1/orders/\(type)/\(id)", host: "pay.platform.example",
                extraHeaders: [(name: "Authorization", value: "AppleOrder \(token)")])
            #expect(fetched.status == 200)
            let order = try WalletOrderJSON.decode(
                try #require(StoredZip.entries(of: fetched.body)?.first { $0.path == "order.json" }).bytes)
            #expect(order.merchant.merchantIdentifier == Self.partner && order.merchant.displayName == "Tea House")
            #expect(order.orderNumber == "tea-1" && order.payment?.total.amount == "7.40")
            #expect(StoredZip.entries(of: fetched.body)?.contains { $0.path == "logo.png" } == true)
        }
    }
}
