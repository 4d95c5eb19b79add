import ApplePay
import Crypto
import Foundation
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardServices
import OrchardTesting
import SwiftASN1
import Testing
import WalletOrders
import X509

/// `merchants[].walletOrders`: the Order Type ID identity in each form a merchant identity takes,
/// and every refusal at startup with its fix.
@Suite("Wallet orders configuration")
struct WalletOrdersConfigurationTests {
    static let orderType = "order.dev.orchard.test"
    let pki: TestPKI
    let issued: TestOrderTypeIdentity

    init() throws {
        pki = TestMaterial.shared.pki
        issued = try pki.issueOrderTypeIdentity(orderTypeIdentifier: Self.orderType)
    }

    static func section(certificate: String = "order.pem", key: String? = "order.key", intermediate: String? = "wwdr.pem")
        -> ConfigurationFile.WalletOrders
    {
        ConfigurationFile.WalletOrders(
            orderTypeIdentifier: orderType, identityCertificate: certificate, identityKey: key, intermediateCertificate: intermediate,
            webServiceURL: "https://pay.shop.example/wallet-orders/", url: "https://shop.example",
            orderManagementURL: "https://shop.example/orders/{orderNumber}")
    }

    /// Resolves the shared test configuration with `section` as its merchant's walletOrders, after `prepare` wrote files.
    func resolve(
        _ section: ConfigurationFile.WalletOrders?, prepare: (TemporaryDirectory) throws -> Void = { _ in }
    ) throws -> MerchantConfiguration {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try issued.leaf.write(certificateTo: directory.path("order.pem"), keyTo: directory.path("order.key"))
        try directory.write("wwdr.pem", Array(try issued.intermediate.certificatePEM.utf8))
        var file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        try prepare(directory)
        file.merchants[0].walletOrders = section
        return try #require(try ServerConfiguration.resolve(file, relativeTo: directory.url.path).merchants.first)
    }

    func refusal(_ section: ConfigurationFile.WalletOrders, prepare: (TemporaryDirectory) throws -> Void = { _ in }) -> String? {
        do {
            _ = try resolve(section, prepare: prepare)
            return nil
        } catch let error as ConfigurationError {
            return error.message
        } catch {
            return "\(error)"
        }
    }

    @Test("a PEM pair with the intermediate beside it loads; defaults: the merchant's name, Apple's production push host")
    func pemPair() throws {
        let settings = try #require(try resolve(Self.section()).walletOrders)
        #expect(settings.orderTypeIdentifier == Self.orderType)
        #expect(settings.webServiceURL == "https://pay.shop.example/wallet-orders")
        #expect(settings.merchantDisplayName == "Orchard Test Shop")
        #expect(settings.apns.baseURL == "https://api.push.apple.com" && settings.apns.isProductionHost)
        #expect(settings.identity.intermediates == [issued.intermediate.certificate])
        #expect(settings.mandateCharges == false && settings.logoPNG == nil)
        #expect(try resolve(nil).walletOrders == nil)
    }

    @Test("a PKCS#12 file holding the intermediate needs no intermediateCertificate")
    func pkcs12() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try issued.leaf.write(certificateTo: directory.path("order.pem"), keyTo: directory.path("order.key"))
        try directory.write("wwdr.pem", Array(try issued.intermediate.certificatePEM.utf8))
        let export = try await OrchardProcess.tool(
            "openssl",
            [
                "pkcs12", "-export", "-in", directory.path("order.pem"), "-inkey", directory.path("order.key"), "-certfile",
                directory.path("wwdr.pem"), "-out", directory.path("order.p12"), "-passout", "pass:s3cret",
            ])
        #expect(export.status == 0, "\(export.stderr)")
        let p12 = try Array(Data(contentsOf: URL(fileURLWithPath: directory.path("order.p12"))))
        var section = Self.section(intermediate: nil)
        section.identityCertificate = nil
        section.identityKey = nil
        section.identity = .init(pkcs12: "order.p12", password: "p12-password")
        let settings = try #require(
            try resolve(section) { folder in
                try folder.write("order.p12", p12)
                try folder.write("p12-password", Array("s3cret\n".utf8))
            }.walletOrders)
        #expect(settings.identity.certificate == issued.leaf.certificate)
    }

    @Test(
        "refused at startup, each with its fix: another type, a merchant identity, expired, foreign key, no intermediate, bad URLs, a non-PNG logo"
    )
    func refusals() throws {
        var otherType = Self.section()
        otherType.orderTypeIdentifier = "order.com.other"
        #expect(refusal(otherType)?.contains("not an Order Type ID certificate for order.com.other") == true)

        let merchantIdentity = refusal(Self.section(certificate: "identity.pem", key: "identity.key"))
        #expect(merchantIdentity?.contains("this is an Apple Pay merchant certificate") == true, "\(merchantIdentity ?? "accepted")")

        let expired = try pki.issueOrderTypeIdentity(
            orderTypeIdentifier: Self.orderType, notValidBefore: Date().addingTimeInterval(-400 * 86_400),
            notValidAfter: Date().addingTimeInterval(-86_400))
        let expiredMessage = refusal(Self.section(certificate: "old.pem", key: "old.key")) { folder in
            try expired.leaf.write(certificateTo: folder.path("old.pem"), keyTo: folder.path("old.key"))
            try folder.write("wwdr.pem", Array(try expired.intermediate.certificatePEM.utf8))
        }
        #expect(expiredMessage?.contains("expired on") == true, "\(expiredMessage ?? "accepted")")

        #expect(refusal(Self.section(key: "identity.key"))?.contains("does not match") == true)
        #expect(refusal(Self.section(intermediate: nil))?.contains("Apple's WWDR G4 certificate") == true)
        #expect(refusal(Self.section(intermediate: "ca.pem"))?.contains("the intermediate did not issue this certificate") == true)

        var plainHTTP = Self.section()
        plainHTTP.webServiceURL = "http://pay.shop.example/wallet-orders"
        #expect(refusal(plainHTTP)?.contains("walletOrders.webServiceURL must be https") == true)
        var withQuery = Self.section()
        withQuery.orderManagementURL = "https://shop.example/orders?id={orderNumber}"
        #expect(refusal(withQuery)?.contains("walletOrders.orderManagementURL must be an absolute URL") == true)

        var mock = Self.section()
        mock.apns = .init(baseURL: "https://127.0.0.1:9443")
        #expect(refusal(mock)?.contains("set apns.allowNonAppleHost to true") == true)
        mock.apns?.allowNonAppleHost = true
        #expect(refusal(mock) == nil)

        var logo = Self.section()
        logo.logo = "ca.pem"
        #expect(refusal(logo)?.contains("walletOrders.logo must be a PNG file") == true)
    }

    @Test(
        "the doctor names the Order Type ID, its days left and the push host, after signing a sample package; a broken one fails its line")
    func doctor() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try issued.leaf.write(certificateTo: directory.path("order.pem"), keyTo: directory.path("order.key"))
        try directory.write("wwdr.pem", Array(try issued.intermediate.certificatePEM.utf8))
        var file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        file.merchants[0].walletOrders = Self.section()
        // The doctor's clock is the test's: 100 and a half days before the certificate ends. (On the
        // wall clock the days left were 365 or 364, by whether the check ran within the half second
        // the certificate's end had been rounded up by.)
        let end = issued.leaf.certificate.notValidAfter
        let clock = TimeSource { end.addingTimeInterval(-100.5 * 86_400) }
        let report = await Doctor(sessions: nil, time: clock).check(file: file, folder: directory.url.path, environment: [:])
        let line = try #require(report.checks.first { $0.check == "wallet orders" })
        #expect(line.passed, "\(line.detail)")
        #expect(
            line.detail.contains("Order Type ID \(Self.orderType), 100 days left; a sample package signs; pushes go to api.push.apple.com"))

        file.merchants[0].walletOrders = Self.section(intermediate: nil)
        let broken = await Doctor(sessions: nil, time: clock).check(file: file, folder: directory.url.path, environment: [:])
        let failed = try #require(broken.checks.first { $0.check == "wallet orders" })
        #expect(!failed.passed && failed.detail.contains("WWDR G4"))
    }

    @Test("an Order Type ID certificate where the merchant identity goes is refused, named as what it is")
    func orderTypeAsMerchantIdentity() throws {
        let message = refusal(Self.section()) { folder in
            try issued.leaf.write(certificateTo: folder.path("identity.pem"), keyTo: folder.path("identity.key"))
        }
        #expect(
            message?.contains("this is an Order Type ID certificate (Wallet orders) where the merchant identity certificate goes") == true,
            "\(message ?? "accepted")")
    }

    @Test("apns.tokenKey, keyId and teamId: a .p8 key read for provider tokens; all three or none")
    func providerTokenKey() throws {
        let key = P256.Signing.PrivateKey()
        var section = Self.section()
        section.apns = .init()
        section.apns?.tokenKey = "apns.p8"
        section.apns?.keyId = "ABC123DEFG"
        section.apns?.teamId = "TEAM123456"
        let settings = try #require(
            try resolve(section) { folder in try folder.write("apns.p8", Array(key.pemRepresentation.utf8)) }.walletOrders)
        #expect(settings.apnsToken?.key.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        #expect(settings.apnsToken?.keyId == "ABC123DEFG" && settings.apnsToken?.teamId == "TEAM123456")
        section.apns?.teamId = nil
        #expect(refusal(section)?.contains("tokenKey, keyId and teamId go together") == true)
    }
}
