import ApplePay
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardRuntime
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import ProcessorClients
import Synchronization
import Testing

@Suite("Startup checks of certificates, keys and configuration")
struct StartupTests {
    /// Writes a valid configuration and lets `mutate` break it; returns the config path.
    func configuration(
        _ directory: TemporaryDirectory, mutate: (inout ConfigurationFile) throws -> Void = { _ in }
    ) throws -> String {
        var file = try ServerHarness.configurationFile(gatewayPort: 9, directory: directory)
        try mutate(&file)
        let data = try JSONEncoder().encode(file)
        try data.write(to: directory.url.appendingPathComponent("orchard.json"))
        return directory.path("orchard.json")
    }

    func loadError(_ path: String, environment: [String: String] = [:]) -> String? {
        do {
            _ = try ServerConfiguration.load(path: path, environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    @Test("a valid configuration loads, with paths relative to its folder")
    func valid() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let configuration = try ServerConfiguration.load(path: try configuration(directory))
        #expect(configuration.merchants.first?.domains == [ServerHarness.domain, ServerHarness.unregisteredDomain])
        #expect(configuration.merchants.first?.domainAssociation == ServerHarness.associationFile)
        #expect(!configuration.gateway.isProductionHost)
    }

    @Test("the identity key may come from an environment variable")
    func keyFromEnvironment() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let path = try configuration(directory) { $0.merchants[0].identityKey = "env:ORCHARD_TEST_KEY" }
        let key = try TestMaterial.shared.identity.keyPEM
        _ = try ServerConfiguration.load(path: path, environment: ["ORCHARD_TEST_KEY": key])
        #expect(loadError(path)?.contains("environment variable ORCHARD_TEST_KEY") == true)
    }

    @Test("missing, unreadable, mismatched, expired and not-yet-valid identities are named")
    func identityProblems() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let missing = try configuration(directory) { $0.merchants[0].identityCertificate = "nope.pem" }
        #expect(loadError(missing) == "\(directory.path("nope.pem")): cannot read identityCertificate (no such file)")

        try directory.write("garbage.pem", Array("hello".utf8))
        let garbage = try configuration(directory) { $0.merchants[0].identityCertificate = "garbage.pem" }
        #expect(loadError(garbage)?.hasPrefix(directory.path("garbage.pem")) == true)

        let other = try TestMaterial.shared.pki.issueMerchantIdentity(merchantIdentifier: TestMaterial.merchantIdentifier)
        try other.write(certificateTo: directory.path("other.pem"), keyTo: directory.path("other.key"))
        let mismatched = try configuration(directory) { $0.merchants[0].identityKey = "other.key" }
        #expect(
            loadError(mismatched)
                == "\(directory.path("other.key")): the private key does not match the certificate \(directory.path("identity.pem"))")

        let expired = try TestMaterial.shared.pki.issueMerchantIdentity(
            merchantIdentifier: TestMaterial.merchantIdentifier, notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
            notValidAfter: Date(timeIntervalSinceNow: -86_400))
        try expired.write(certificateTo: directory.path("expired.pem"), keyTo: directory.path("expired.key"))
        let expiredPath = try configuration(directory) {
            $0.merchants[0].identityCertificate = "expired.pem"
            $0.merchants[0].identityKey = "expired.key"
        }
        #expect(loadError(expiredPath)?.hasPrefix("\(directory.path("expired.pem")): certificate expired on ") == true)

        let future = try TestMaterial.shared.pki.issueMerchantIdentity(
            merchantIdentifier: TestMaterial.merchantIdentifier, notValidBefore: Date(timeIntervalSinceNow: 86_400),
            notValidAfter: Date(timeIntervalSinceNow: 800 * 86_400))
        try future.write(certificateTo: directory.path("future.pem"), keyTo: directory.path("future.key"))
        let futurePath = try configuration(directory) {
            $0.merchants[0].identityCertificate = "future.pem"
            $0.merchants[0].identityKey = "future.key"
        }
        #expect(loadError(futurePath)?.contains("is not valid before") == true)
    }

    @Test("unsafe or inconsistent settings are refused")
    func settingsProblems() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let notApple = try configuration(directory) { $0.appleGateway?.allowNonAppleHost = nil }
        #expect(loadError(notApple)?.contains("is not an Apple Pay gateway host") == true)
        let lookalike = try configuration(directory) {
            $0.appleGateway = .init(baseURL: "https://apple-pay-gateway.apple.com.evil.test")
        }
        #expect(loadError(lookalike)?.contains("is not an Apple Pay gateway host") == true)
        let plainHTTP = try configuration(directory) { $0.appleGateway?.baseURL = "http://127.0.0.1:9" }
        #expect(loadError(plainHTTP)?.contains("must be an https URL") == true)
        let vault = try configuration(directory) { $0.payments?.vaultKey = "env:ORCHARD_VAULT_KEY" }
        #expect(loadError(vault)?.contains("ORCHARD_VAULT_KEY for payments.vaultKey is not set") == true)
        #expect(loadError(vault, environment: ["ORCHARD_VAULT_KEY": "0123"])?.contains("must be 64 hex digits") == true)
        #expect(loadError(vault, environment: ["ORCHARD_VAULT_KEY": String(repeating: "0f", count: 32)]) == nil)
        let backoff = try configuration(directory) { $0.payments?.reconcileMaximumDelaySeconds = 5 }
        #expect(loadError(backoff)?.contains("reconcileMaximumDelaySeconds") == true, "shorter than the first delay")
        let longName = try configuration(directory) { $0.merchants[0].displayName = String(repeating: "x", count: 65) }
        #expect(loadError(longName)?.contains("displayName must be 1 to 64 characters") == true)
        let badDomain = try configuration(directory) { $0.merchants[0].domains = ["shop example"] }
        #expect(loadError(badDomain)?.contains("is not a valid domain name") == true)
        let duplicate = try configuration(directory) {
            $0.merchants.append($0.merchants[0])
            $0.merchants[1].merchantIdentifier = "merchant.other"
        }
        #expect(loadError(duplicate)?.contains("is already configured for") == true)
        let slow = try configuration(directory) { $0.appleGateway?.timeoutMilliseconds = 30_000 }
        #expect(loadError(slow)?.contains("Safari gives up") == true)
        try directory.write("broken.json", Array(#"{"merchants": [}"#.utf8))
        #expect(loadError(directory.path("broken.json"))?.contains("not valid JSON") == true)
        try directory.write("incomplete.json", Array(#"{"merchants": [{"merchantIdentifier": "m"}]}"#.utf8))
        #expect(loadError(directory.path("incomplete.json"))?.contains("missing key merchants[0].displayName") == true)
    }

    @Test("tracing.otlp is read strictly, and a build without the OTel trait refuses it")
    func traceExport() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        func exported(_ path: String) throws -> TraceExportSettings? {
            let configuration = try ServerConfiguration.load(path: path, environment: [:], processors: ProcessorFactory.drivers)
            return configuration.traceExport
        }
        #expect(try exported(try configuration(directory)) == nil)
        let defaults = try configuration(directory) { $0.tracing = .init(otlp: .init()) }
        #expect(
            try exported(defaults)
                == TraceExportSettings(tracesURL: "http://127.0.0.1:4318/v1/traces", protocol: .httpProtobuf, serviceName: "orchard"))
        let chosen = try configuration(directory) {
            $0.tracing = .init(
                otlp: .init(endpoint: "https://collector.example:4318/otlp/", protocol: "http/json"), serviceName: "shop-pay")
        }
        #expect(
            try exported(chosen)
                == TraceExportSettings(
                    tracesURL: "https://collector.example:4318/otlp/v1/traces", protocol: .httpJSON, serviceName: "shop-pay"))
        let grpc = try configuration(directory) { $0.tracing = .init(otlp: .init(protocol: "grpc")) }
        #expect(loadError(grpc)?.contains("tracing.otlp.protocol must be \"http/protobuf\" or \"http/json\"") == true)
        let ftp = try configuration(directory) { $0.tracing = .init(otlp: .init(endpoint: "ftp://collector.example")) }
        #expect(loadError(ftp)?.contains("tracing.otlp.endpoint") == true)
        let credentials = try configuration(directory) {
            $0.tracing = .init(otlp: .init(endpoint: "https://user:secret@collector.example"))
        }
        #expect(loadError(credentials)?.contains("without credentials") == true)
        let nameOnly = try configuration(directory) { $0.tracing = .init(serviceName: "orchard") }
        #expect(loadError(nameOnly)?.contains("tracing.otlp is not: nothing would be exported") == true)

        var json = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: defaults))) as? [String: Any])
        json["tracing"] = ["otlp": ["endpont": "http://127.0.0.1:4318"]]
        try directory.write("typo.json", Array(try JSONSerialization.data(withJSONObject: json)))
        #expect(loadError(directory.path("typo.json"))?.contains("tracing.otlp.endpont: not a setting") == true)

        let exporting = try configuration(directory) { $0.tracing = .init(otlp: .init()) }
        #if OTel
            #expect(loadError(exporting) == nil)
        #else
            #expect(
                loadError(exporting)
                    == "tracing.otlp: this orchard was built without the OTel trait: build with --traits OTel to export spans, or remove the section"
            )
        #endif
    }
}

@Suite("The example configuration in Config/ stays in step with the code")
struct ExampleConfigurationTests {
    static let config = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Config")

    @Test("Config/orchard.json and Config/catalogue.json decode")
    func examplesDecode() throws {
        let file = try JSONDecoder().decode(
            ConfigurationFile.self, from: Data(contentsOf: Self.config.appendingPathComponent("orchard.json")))
        #expect(file.merchants.first?.catalogue == "catalogue.json")
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let catalogue = try decoder.decode(Catalogue.self, from: Data(contentsOf: Self.config.appendingPathComponent("catalogue.json")))
        _ = try catalogue.validated()
    }
}
