import Crypto
import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509
import _CryptoExtras

@testable import WalletOrders

/// A signed order the way Orchard makes one, for the tests of this target.
enum PackageFixture {
    static let orderType = "order.dev.orchard.test"
    static let created = Date(timeIntervalSince1970: 1_795_000_000.250)

    static func order(updated: Date = created) -> WalletOrder {
        let eur = { (amount: String) in WalletOrder.CurrencyAmount(amount: amount, currency: "EUR") }
        var shipping = WalletOrder.Fulfillment(fulfillmentIdentifier: "f1", kind: .shipping, status: "onTheWay")
        shipping.carrier = "DHL"
        shipping.trackingNumber = "00340434161094042557"
        shipping.trackingURL = "https://carrier.example/track/00340434161094042557"
        shipping.estimatedDeliveryAt = created.addingTimeInterval(3 * 86_400)
        return WalletOrder(
            orderTypeIdentifier: orderType, orderIdentifier: "wo_3f9a2c", orderNumber: "A-1001",
            orderManagementURL: "https://shop.example/orders/A-1001", webServiceURL: "https://pay.shop.example/wallet-orders/",
            authenticationToken: "tok_0123456789abcdef0123", createdAt: created, updatedAt: updated, status: .open,
            merchant: .init(
                merchantIdentifier: "merchant.dev.orchard.test", displayName: "Orchard Test Shop", url: "https://shop.example",
                logo: "logo.png"),
            payment: .init(
                total: eur("24.50"), status: .authorized, summaryItems: [.init(label: "Shipping", value: eur("4.50"))],
                paymentMethods: ["Visa 1234"],
                transactions: [
                    .init(
                        amount: eur("24.50"), createdAt: created, paymentMethod: .init(displayName: "Visa 1234"), status: .approved,
                        transactionType: .purchase)
                ]),
            lineItems: [.init(title: "Apple tart", quantity: 2, price: eur("10.00"), sku: "tart")],
            fulfillments: [shipping])
    }

    /// A PNG header and a little more: the package treats images as bytes.
    static let logo: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + Array(repeating: 7, count: 200)
}

@Suite("Wallet order package: order.json, manifest, signature, zip")
struct WalletOrderPackageTests {
    static func check(_ package: [UInt8], ca: Certificate) async throws -> (order: String, names: String, stderr: String, status: Int32) {
        let result = try await WalletOrderPackageCheck.check(package, ca: ca)
        return (result.orderJSON, result.names.joined(separator: " "), result.stderr, result.status)
    }

    static func identity(_ pki: TestPKI, orderType: String = PackageFixture.orderType) throws -> OrderTypeIdentity {
        let issued = try pki.issueOrderTypeIdentity(orderTypeIdentifier: orderType)
        return try OrderTypeIdentity(
            orderTypeIdentifier: orderType, certificate: issued.leaf.certificate, privateKey: issued.leaf.privateKey,
            intermediates: [issued.intermediate.certificate], name: "order-type.pem", at: Date())
    }

    @Test("openssl cms -verify accepts the signature against the CA; every manifest hash matches; order.json reads back")
    func signedAndVerified() async throws {
        let pki = try TestPKI.make()
        let signer = try Self.identity(pki)
        let order = PackageFixture.order()
        let package = try WalletOrderPackage.build(
            order, images: [.init(path: "logo.png", bytes: PackageFixture.logo)], signer: signer, signingTime: Date())
        let checked = try await Self.check(package, ca: pki.ca.certificate)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(checked.names == "order.json logo.png manifest.json signature")
        #expect(try WalletOrderJSON.decode(Array(checked.order.utf8)) == order)
        #expect(checked.order.contains(#""createdAt":"2026-11-18T11:06:40.250Z""#))
        #expect(checked.order.contains(#""amount":"24.50""#))
        #expect(checked.order.contains(#""fulfillmentType":"shipping""#))
    }

    @Test("a package signed by another CA's intermediate fails openssl's verification against ours")
    func otherCA() async throws {
        let ours = try TestPKI.make()
        let theirs = try TestPKI.make(commonName: "Another CA")
        let package = try WalletOrderPackage.build(
            PackageFixture.order(), images: [], signer: try Self.identity(theirs), signingTime: Date())
        let checked = try await Self.check(package, ca: ours.ca.certificate)
        #expect(checked.status != 0)
        #expect(checked.stderr.contains("openssl cms -verify failed"))
    }

    @Test("the check can fail: a signed package whose order.json breaks Apple's schema is refused by jsonschema")
    func schemaCheckFails() async throws {
        let pki = try TestPKI.make()
        let signer = try Self.identity(pki)
        var json = String(decoding: try WalletOrderJSON.encode(PackageFixture.order()), as: UTF8.self)
        json = json.replacingOccurrences(of: #""orderType":"ecommerce""#, with: #""orderType":"retail""#)
        let files = [StoredZip.Entry(path: "order.json", bytes: Array(json.utf8))]
        let manifest = try WalletOrderManifest.json(for: files)
        let package = try StoredZip.archive(
            files + [
                .init(path: "manifest.json", bytes: manifest),
                .init(path: "signature", bytes: try signer.signature(over: manifest, signingTime: Date())),
            ],
            modified: Date())
        let checked = try await WalletOrderPackageCheck.check(package, ca: pki.ca.certificate)
        #expect(checked.status != 0 && checked.stderr.contains("ValidationError"), "\(checked.stderr)")
    }

    @Test("an order that breaks Apple's schema is not packaged")
    func schemaRules() throws {
        let signer = try Self.identity(try TestPKI.make())
        var order = PackageFixture.order()
        order.authenticationToken = "short"
        order.fulfillments?[0].status = "readyForPickup"
        order.payment?.total.amount = "1,00"
        #expect(
            order.problems() == [
                "authenticationToken is shorter than 16 characters", "1,00 EUR is not a decimal amount with an ISO 4217 code",
                "readyForPickup is not a shipping fulfillment status",
            ])
        #expect(throws: WalletOrderError.self) { try WalletOrderPackage.build(order, images: [], signer: signer, signingTime: Date()) }
        var otherType = PackageFixture.order()
        otherType.orderTypeIdentifier = "order.other"
        #expect(throws: WalletOrderError.self) { try WalletOrderPackage.build(otherType, images: [], signer: signer, signingTime: Date()) }
    }
}
