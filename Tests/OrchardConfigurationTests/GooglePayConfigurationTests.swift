import ApplePay
import Crypto
import CurlClient
import Foundation
import GooglePay
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardServices
import OrchardTesting
import ProcessorClients
import Testing

/// `merchants[].googlePay`: the two modes as the server loads them, and the doctor's line.
/// Every refusal is walked through serve and doctor in OrchardCLITests' ServeRefusalWalkTests.
@Suite("Google Pay configuration")
struct GooglePayConfigurationTests {
    static let minter = GooglePayMinter()

    /// The shared test configuration (a `record` processor) with `section` as its merchant's googlePay.
    func load(_ section: ConfigurationFile.GooglePay, directKey: P256.KeyAgreement.PrivateKey? = nil) throws -> (
        ConfigurationFile, TemporaryDirectory
    ) {
        let directory = try TemporaryDirectory()
        try directory.write("keys.json", Self.minter.rootKeysJSON)
        if let directKey { try directory.write("direct.key", Array(directKey.pemRepresentation.utf8)) }
        var file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        file.merchants[0].googlePay = section
        return (file, directory)
    }

    static func gateway() -> ConfigurationFile.GooglePay {
        var section = ConfigurationFile.GooglePay(signingKeys: "keys.json")
        section.gateway = "orchard-test"
        section.gatewayMerchantId = "shop-1"
        return section
    }

    @Test("gateway mode: tokens signed for gateway:<gateway>, TEST, device tokens only, Google's pay.js, by default")
    func gatewayDefaults() throws {
        let (file, directory) = try load(Self.gateway())
        defer { directory.remove() }
        let merchant = try #require(try ServerConfiguration.resolve(file, relativeTo: directory.url.path).merchants.first)
        let settings = try #require(merchant.googlePay)
        #expect(settings.recipientId == "gateway:orchard-test" && settings.environment == .test)
        #expect(settings.allowedAuthMethods == ["CRYPTOGRAM_3DS"] && settings.allowedCardNetworks == ["MASTERCARD", "VISA"])
        #expect(settings.scriptURL == "https://pay.google.com/gp/p/js/pay.js" && settings.merchantName == "Orchard Test Shop")
        #expect(
            settings.tokenizationSpecification
                == ["type": "PAYMENT_GATEWAY", "parameters": ["gateway": "orchard-test", "gatewayMerchantId": "shop-1"]])
    }

    @Test("direct mode: tokens signed for merchant:<merchantId>, and Google is handed the first key's public point in base64")
    func direct() throws {
        let key = P256.KeyAgreement.PrivateKey()
        var section = ConfigurationFile.GooglePay(signingKeys: "keys.json")
        section.directKeys = ["direct.key"]
        section.merchantId = "12345678901234567890"
        section.allowedAuthMethods = ["PAN_ONLY", "CRYPTOGRAM_3DS"]
        let (file, directory) = try load(section, directKey: key)
        defer { directory.remove() }
        let settings = try #require(try ServerConfiguration.resolve(file, relativeTo: directory.url.path).merchants.first?.googlePay)
        #expect(settings.recipientId == "merchant:12345678901234567890")
        let point = Data(key.publicKey.x963Representation).base64EncodedString()
        #expect(
            settings.tokenizationSpecification
                == ["type": "DIRECT", "parameters": ["protocolVersion": "ECv2", "publicKey": .string(point)]])
    }

    @Test("direct mode reads a key as Tink and Google publish it (PKCS#8 PEM) and a recipientId of its own, as for Tink's test tokens")
    func directPKCS8() throws {
        let key = P256.KeyAgreement.PrivateKey()
        let pkcs8 = Data(key.derRepresentation).base64EncodedString(options: .lineLength64Characters)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try directory.write("keys.json", Self.minter.rootKeysJSON)
        try directory.write("direct.pem", Array("-----BEGIN PRIVATE KEY-----\n\(pkcs8)\n-----END PRIVATE KEY-----\n".utf8))
        var file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        var section = ConfigurationFile.GooglePay(signingKeys: "keys.json")
        section.directKeys = ["direct.pem"]
        section.recipientId = "someRecipient"
        file.merchants[0].googlePay = section
        let settings = try #require(try ServerConfiguration.resolve(file, relativeTo: directory.url.path).merchants.first?.googlePay)
        #expect(settings.recipientId == "someRecipient")
        guard case .direct(let keys) = settings.mode else {
            Issue.record("not direct mode")
            return
        }
        #expect(keys.map(\.publicKey.rawRepresentation) == [key.publicKey.rawRepresentation])
    }

    @Test("the doctor names the mode, the recipient and the root keys' days left; keys about to expire fail the line")
    func doctor() async throws {
        let (file, directory) = try load(Self.gateway())
        defer { directory.remove() }
        let now = TimeSource { Self.minter.rootExpiration.addingTimeInterval(-100.5 * 86_400) }
        let report = await Doctor(sessions: nil, time: now).check(file: file, folder: directory.url.path, environment: [:])
        let line = try #require(report.checks.first { $0.check == "google pay" })
        #expect(line.passed, "\(line.detail)")
        #expect(
            line.detail.contains(
                "TEST, gateway mode: tokens sealed for orchard-test, gatewayMerchantId shop-1, sent to the record processor"))
        #expect(line.detail.contains("checked for gateway:orchard-test under 1 root signing key (good for 100 more days)"))

        let late = TimeSource { Self.minter.rootExpiration.addingTimeInterval(-10 * 86_400) }
        let expiring = await Doctor(sessions: nil, time: late).check(file: file, folder: directory.url.path, environment: [:])
        let failed = try #require(expiring.checks.first { $0.check == "google pay" })
        #expect(!failed.passed && failed.detail.contains("expires in 10 days"))
    }

    @Test(
        "doctor --live asks Worldline's GetPaymentProduct 320 for its gateway name: the one it gives passes, another fails naming the fix")
    func liveWorldlineGateway() async throws {
        let mock = try MockProcessors(
            serverIdentity: TestMaterial.shared.server, worldpay: MockProcessorSetup.worldpay, worldline: MockProcessorSetup.worldline)
        try await mock.start()
        let http = try CurlHTTPClient()
        do {
            var section = ConfigurationFile.GooglePay(signingKeys: "keys.json")
            section.gateway = "worldlinedirect"
            section.gatewayMerchantId = MockProcessorSetup.worldline.merchantId
            var (file, directory) = try load(section)
            defer { directory.remove() }
            file.merchants[0].processor = MockProcessorSetup.section(.worldlineEncrypted, baseURL: mock.baseURL)
            let doctor = Doctor(
                sessions: nil, time: .system, processorDrivers: ProcessorFactory.drivers,
                liveProcessors: { CurlProcessorMaker(http: http).processor(for: $0) })
            let folder = directory.url.path
            let report = await doctor.check(file: file, folder: folder, environment: MockProcessorSetup.environment)
            let line = try #require(report.checks.first { $0.check == "google pay" })
            #expect(line.passed, "\(line.detail)")

            file.merchants[0].googlePay?.gateway = "worldlineingenicoogone"
            let wrong = await doctor.check(file: file, folder: folder, environment: MockProcessorSetup.environment)
            let failed = try #require(wrong.checks.first { $0.check == "google pay" })
            #expect(!failed.passed && failed.detail.contains("set googlePay.gateway to worldlinedirect"), "\(failed.detail)")
        } catch {
            await mock.stop()
            throw error
        }
        await mock.stop()
    }
}
