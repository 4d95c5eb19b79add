import Crypto
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardRuntime
import OrchardSQLite
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import SwiftASN1
import Testing
import X509

/// `orchard doctor`'s lines beyond a merchant's: serve's own lines first, the platform
/// integrator's, a merchant without an association file, and `GET /admin/doctor` giving the same report.
@Suite("orchard doctor's report")
struct DoctorReportTests {
    static let platform = "merchant.dev.orchard.platform"

    /// A platform integrator that loads: its identity, association file, a processing key and a settings key.
    static func addPlatform(_ setup: DoctorCommandTests.Setup, identity: TestCertificate? = nil) throws {
        let pki = setup.environment.material.pki
        try (identity ?? pki.issueMerchantIdentity(merchantIdentifier: platform)).write(
            certificateTo: setup.directory.path("platform.pem"), keyTo: setup.directory.path("platform.key"))
        _ = try setup.environment.processingKeys()
        let ec = try setup.environment.processingKeys().ec.publicKey
        let certificate = try pki.issueProcessingCertificate(
            merchantIdentifier: platform,
            publicKey: Certificate.PublicKey(try P256.Signing.PublicKey(rawRepresentation: ec.rawRepresentation)))
        try Data(try certificate.serializeAsPEM().pemString.utf8).write(
            to: URL(fileURLWithPath: setup.directory.path("platform-processing.pem")))
        try Data("platform association\n".utf8).write(to: URL(fileURLWithPath: setup.directory.path("platform-association")))
        try Data((String(repeating: "0f", count: 32) + "\n").utf8).write(to: URL(fileURLWithPath: setup.directory.path("settings.key")))
        try setup.edit { json in
            json["platformIntegrator"] = [
                "merchantIdentifier": platform, "identityCertificate": setup.directory.path("platform.pem"),
                "identityKey": setup.directory.path("platform.key"),
                "domainAssociationFile": setup.directory.path("platform-association"),
                "processingKeys": [
                    ["privateKey": setup.environment.ecProcessingKeyFile, "certificate": setup.directory.path("platform-processing.pem")]
                ],
                "settingsKey": setup.directory.path("settings.key"),
            ]
        }
    }

    @Test("the platform integrator has its own lines: identity, merchant ID, association file, keys, a decrypted token, the settings key")
    func platformLines() async throws {
        try await DoctorCommandTests.withSetup { setup in
            try Self.addPlatform(setup)
            let (status, lines) = try await setup.doctor(live: false)
            #expect(status == 0, "\(lines)")
            #expect(
                lines.first?.hasPrefix("✓ configuration load: orchard serve accepts it: 1 merchant, platform integrator \(Self.platform)")
                    == true, "\(lines)")
            let subject = "✓ platform \(Self.platform)"
            let platformLines = lines.filter { $0.hasPrefix(subject) }
            try #require(platformLines.count == 6, "\(lines)")
            #expect(platformLines[0].hasPrefix("\(subject) identity: certificate and key match; valid until "), "\(platformLines)")
            #expect(platformLines[1] == "\(subject) merchant ID: the certificate is \(Self.platform)'s")
            #expect(platformLines[2] == "\(subject) association file: 21 bytes, served unchanged")
            #expect(platformLines[3].hasPrefix("\(subject) processing key 1: publicKeyHash "))
            #expect(platformLines[4].hasPrefix("\(subject) token for processing key 1: a token encrypted to publicKeyHash "))
            #expect(platformLines[4].hasSuffix("for \(Self.platform) decrypts with the configured keys"))
            #expect(
                platformLines[5]
                    == "\(subject) settings key: registered merchants' processor and webhook settings are sealed with it at rest")
        }
    }

    @Test("registered merchants' settings sealed with the configured settingsKey are ✓ with their count, read by serve's own load")
    func registeredSettingsOpen() async throws {
        try await DoctorCommandTests.withSetup { setup in
            try Self.addPlatform(setup)
            let configuration = try ServerConfiguration.load(path: setup.configuration, environment: [:])
            let sealer = try #require(configuration.settingsSealer)
            try FileManager.default.createDirectory(atPath: configuration.stateDirectory, withIntermediateDirectories: true)
            let store = try SQLiteStore(
                path: URL(fileURLWithPath: configuration.stateDirectory).appendingPathComponent("orchard.sqlite").path)
            for partner in ["merchant.dev.orchard.tenant-a", "merchant.dev.orchard.tenant-b"] {
                let sealed = try sealer.seal(MerchantSettingsFile(), partnerIdentifier: partner)
                try await store.saveSealedMerchantSettings(partnerIdentifier: partner, sealed: sealed, at: Date())
            }
            let (status, lines) = try await setup.doctor(live: false)
            #expect(status == 0, "\(lines)")
            #expect(
                lines.dropFirst(2).first
                    == "✓ store registered settings: the settings of 2 registered merchants open with platformIntegrator.settingsKey and check",
                "\(lines)")
        }
    }

    @Test("a platform key that does not match its certificate is ✗ as serve says it, and an identity for another merchant ID is named")
    func brokenPlatform() async throws {
        try await DoctorCommandTests.withSetup { setup in
            try Self.addPlatform(setup)
            let stranger = try setup.environment.material.pki.issueMerchantIdentity(merchantIdentifier: Self.platform)
            try stranger.write(certificateTo: setup.directory.path("stranger.pem"), keyTo: setup.directory.path("stranger.key"))
            try setup.edit { json in
                var platform = json["platformIntegrator"] as? [String: Any] ?? [:]
                platform["identityKey"] = setup.directory.path("stranger.key")
                json["platformIntegrator"] = platform
            }
            let serve = try await OrchardProcess.run(["serve", "--config", setup.configuration])
            #expect(serve.status == 1)
            let refusal = try #require(serve.stderr.split(separator: "\n").first { $0.hasPrefix("orchard: ") }).dropFirst("orchard: ".count)
            #expect(refusal.contains("does not match"), "\(refusal)")
            let (status, lines) = try await setup.doctor(live: false)
            #expect(status == 1)
            #expect(lines.first == "✗ configuration load: \(refusal)", "\(lines)")
            #expect(lines.contains("✗ platform \(Self.platform) identity: \(refusal)"), "\(lines)")
        }
        try await DoctorCommandTests.withSetup { setup in
            let other = try setup.environment.material.pki.issueMerchantIdentity(merchantIdentifier: "merchant.dev.orchard.other")
            try Self.addPlatform(setup, identity: other)
            let (status, lines) = try await setup.doctor(live: false)
            #expect(status == 1)
            #expect(
                lines.contains {
                    $0.hasPrefix("✗ platform \(Self.platform) merchant ID: the identity certificate is for another merchant ID")
                },
                "\(lines)")
        }
    }

    @Test("--live with a gateway serve refuses: the report still comes, ✗ with serve's message, and says no session was asked for")
    func liveWithARefusedGateway() async throws {
        try await DoctorCommandTests.withSetup { setup in
            try setup.edit { json in
                var gateway = json["appleGateway"] as? [String: Any] ?? [:]
                gateway["baseURL"] = "http://127.0.0.1:1"
                json["appleGateway"] = gateway
            }
            let (status, lines) = try await setup.doctor(live: true)
            #expect(status == 1)
            let refusal = "appleGateway.baseURL: http://127.0.0.1:1 must be an https URL without credentials or query"
            #expect(lines.first == "✗ configuration load: \(refusal)", "\(lines)")
            #expect(lines.contains("✗ appleGateway live: \(refusal)"), "\(lines)")
            #expect(lines.contains { $0.hasPrefix("✓ merchant.dev.orchard.demo identity: ") }, "the pieces are still checked: \(lines)")
        }
    }

    @Test("no domainAssociationFile is ✓, as serve accepts it: the line says Orchard will not serve the file")
    func noAssociationFile() async throws {
        try await DoctorCommandTests.withSetup { setup in
            try setup.merchant { $0["domainAssociationFile"] = nil }
            let (status, lines) = try await setup.doctor(live: false)
            #expect(status == 0, "\(lines)")
            #expect(
                lines.contains(
                    "✓ merchant.dev.orchard.demo association file: no domainAssociationFile: Orchard will not serve /.well-known/apple-developer-merchantid-domain-association, so each domain's own web server must serve Apple's file (check with --domains)"
                ), "\(lines)")
        }
    }

    @Test("GET /admin/doctor is orchard doctor's report: the same checks, the store's included")
    func adminDoctorIsTheSameReport() async throws {
        let server = try ServerProcess(processorURL: nil)
        try await server.start()
        let response = try await server.send("GET", "/admin/doctor", admin: true)
        let command = try await server.command(["doctor", "--json"])
        await server.stop()
        #expect(response.status == 200)
        struct Check: Decodable, Equatable {
            var subject, check, detail: String
            var passed: Bool
        }
        struct Report: Decodable { var checks: [Check] }
        let adminChecks = try JSONDecoder().decode(Report.self, from: Data(response.body)).checks
        let cliChecks = try JSONDecoder().decode(Report.self, from: Data(command.stdout)).checks
        #expect(adminChecks.contains { $0.subject == "store" && $0.check == "SQLite" && $0.passed }, "\(adminChecks)")
        #expect(
            adminChecks.contains { $0.subject == "store" && $0.check == "registered settings" && $0.passed }, "\(adminChecks)")
        #expect(adminChecks.first?.subject == "configuration", "\(adminChecks)")
        #expect(adminChecks == cliChecks, "admin: \(adminChecks)\ncli: \(cliChecks)")
    }
}
