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
    /// Unzips with Python, checks each manifest hash with hashlib, then has `openssl cms -verify`
    /// check the signature over the manifest against the test CA alone (the intermediate must come
    /// from the signature itself). Prints `order.json`, then the file list.
    static let checker = #"""
        import hashlib, json, subprocess, sys, zipfile
        package, ca, out = sys.argv[1:4]
        with zipfile.ZipFile(package) as archive:
            names = archive.namelist()
            files = {name: archive.read(name) for name in names}
        manifest = json.loads(files["manifest.json"])
        assert sorted(manifest) == sorted(n for n in names if n not in ("manifest.json", "signature")), (manifest, names)
        for name, digest in manifest.items():
            assert hashlib.sha256(files[name]).hexdigest() == digest, name
        open(out + "/manifest.json", "wb").write(files["manifest.json"])
        open(out + "/signature", "wb").write(files["signature"])
        verify = subprocess.run(["openssl", "cms", "-verify", "-binary", "-inform", "DER", "-in", out + "/signature",
            "-content", out + "/manifest.json", "-CAfile", ca, "-purpose", "any", "-out", "/dev/null"], capture_output=True, text=True)
        sys.stderr.write(verify.stderr)
        assert verify.returncode == 0, "openssl cms -verify failed"
        printed = subprocess.run(["openssl", "cms", "-cmsout", "-print", "-inform", "DER", "-in", out + "/signature"], capture_output=True, text=True).stdout
        assert "signingTime" in printed, "no signing time"
        assert "eContent: <ABSENT>" in printed, "not detached"
        print(files["order.json"].decode())
        print(" ".join(names))
        """#

    static func check(_ package: [UInt8], ca: Certificate) async throws -> (order: String, names: String, stderr: String, status: Int32) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("order-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Data(package).write(to: folder.appendingPathComponent("package.order"))
        try Data((try ca.serializeAsPEM().pemString + "\n").utf8).write(to: folder.appendingPathComponent("ca.pem"))
        let result = try await OrchardProcess.tool(
            "python3",
            ["-c", checker, folder.appendingPathComponent("package.order").path, folder.appendingPathComponent("ca.pem").path, folder.path])
        let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
        return (lines.first ?? "", lines.last ?? "", result.stderr, result.status)
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
