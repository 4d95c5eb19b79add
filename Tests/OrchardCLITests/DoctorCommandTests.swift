import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509

/// `orchard doctor` as an operator runs it: against the demo's setup and a mock gateway on
/// loopback, then with each part broken.
@Suite("orchard doctor")
struct DoctorCommandTests {
    struct Setup {
        let directory: TemporaryDirectory
        let environment: DemoEnvironment
        let gateway: MockAppleGateway
        let configuration: String

        /// Rewrites the configuration.
        func edit(_ change: (inout [String: Any]) -> Void) throws {
            var json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configuration))) as? [String: Any])
            change(&json)
            try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: configuration))
        }

        /// Rewrites the configuration's first merchant.
        func merchant(_ change: (inout [String: Any]) -> Void) throws {
            try edit { json in
                var merchants = json["merchants"] as? [[String: Any]] ?? []
                change(&merchants[0])
                json["merchants"] = merchants
            }
        }

        /// Writes `identity` as `<name>.pem` and `<name>.key` and makes it the merchant's identity.
        func useIdentity(_ identity: TestCertificate, named name: String, merchantIdentifier: String? = nil) throws {
            try identity.write(certificateTo: directory.path("\(name).pem"), keyTo: directory.path("\(name).key"))
            try merchant {
                $0["identityCertificate"] = directory.path("\(name).pem")
                $0["identityKey"] = directory.path("\(name).key")
                if let merchantIdentifier { $0["merchantIdentifier"] = merchantIdentifier }
            }
        }

        func doctor(live: Bool = true) async throws -> (status: Int32, lines: [String]) {
            let result = try await OrchardProcess.run(["doctor", "--config", configuration] + (live ? ["--live"] : []))
            #expect(!ChildProcess.isCrash(result.status), "orchard doctor was \(result.exit): \(result.stderr.suffix(4000))")
            return (result.status, String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init))
        }
    }

    static func withSetup(faults: MockGatewayFaults = .none, _ body: (Setup) async throws -> Void) async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let environment = try DemoEnvironment.prepare(directory: directory.path("demo"))
        let gateway = try environment.makeGateway(faults: faults)
        let port = try await gateway.start()
        defer { Task { await gateway.stop() } }
        let configuration = try environment.writeServerConfiguration(gatewayPort: port, serverPort: 0, publicDirectory: nil)
        try await body(Setup(directory: directory, environment: environment, gateway: gateway, configuration: configuration))
    }

    @Test(
        "passes on the demo's setup, live, with one ✓ line per check: serve's loader, the store, its registered settings and the vault key first"
    )
    func demoPasses() async throws {
        try await Self.withSetup { setup in
            let (status, lines) = try await setup.doctor()
            #expect(status == 0, "\(lines)")
            #expect(lines.count == 9)
            #expect(
                lines.first == "✓ configuration load: orchard serve accepts it: 1 merchant; it listens on 127.0.0.1:0",
                "serve's loader first: \(lines)")
            #expect(lines.dropFirst().first?.hasPrefix("✓ store SQLite: ") == true, "then the store: \(lines)")
            #expect(
                lines.dropFirst(2).first == "✓ store registered settings: no registered merchants yet",
                "then the registered merchants' settings: \(lines)")
            #expect(lines.dropFirst(3).first?.hasPrefix("✓ payments vault key: ") == true, "then the vault key: \(lines)")
            #expect(lines.dropFirst(4).allSatisfy { $0.hasPrefix("✓ merchant.dev.orchard.demo ") })
            // Doctor read the store without creating it.
            let database = URL(fileURLWithPath: setup.configuration).deletingLastPathComponent().appendingPathComponent(
                "state/orchard.sqlite")
            #expect(!FileManager.default.fileExists(atPath: database.path), "doctor created \(database.path)")
            #expect(lines.contains("✓ merchant.dev.orchard.demo session localhost: Apple returned a merchant session"))
        }
    }

    #if !OTel
        @Test("a tracing.otlp section fails the check in a build without the OTel trait")
        func traceExportNeedsTheTrait() async throws {
            try await Self.withSetup { setup in
                try setup.edit { $0["tracing"] = ["otlp": ["endpoint": "http://127.0.0.1:4318"]] }
                let (status, lines) = try await setup.doctor(live: false)
                #expect(status == 1)
                let refusal =
                    "tracing.otlp: this orchard was built without the OTel trait: build with --traits OTel to export spans, or remove the section"
                #expect(lines.first == "✗ configuration load: \(refusal)", "serve refuses it: \(lines)")
                #expect(lines.last == "✗ tracing OTLP: \(refusal)", "\(lines)")
            }
        }
    #endif

    @Test(
        "each gateway failure has its own plain line and exit 1",
        arguments: [
            (MockGatewayFaults(status: 500), "Apple refused the request (HTTP 500: Injected fault 500)"),
            (MockGatewayFaults(status: 403), "Apple did not accept the identity certificate"),
            (MockGatewayFaults(resetConnection: true), "Apple's gateway could not be reached"),
            (MockGatewayFaults(latency: .seconds(4)), "Apple's gateway did not answer in time"),
        ])
    func gatewayFailures(faults: MockGatewayFaults, expected: String) async throws {
        try await Self.withSetup(faults: faults) { setup in
            // Short timeouts only where the timeout is what is tested: under CI load a reset or an
            // error answer can take longer than 1.5 s to arrive, and would then read as a timeout.
            let slow = faults.latency > .zero
            try setup.edit { json in
                var gateway = json["appleGateway"] as? [String: Any] ?? [:]
                gateway["connectTimeoutMilliseconds"] = slow ? 1000 : 10_000
                gateway["timeoutMilliseconds"] = slow ? 1500 : 15_000
                json["appleGateway"] = gateway
            }
            let (status, lines) = try await setup.doctor()
            #expect(status == 1)
            let failed = lines.filter { $0.hasPrefix("✗") }
            #expect(failed.count == 2, "\(lines)")
            #expect(failed.allSatisfy { $0.contains(expected) }, "\(failed)")
        }
    }

    @Test("a domain Apple does not know for the merchant, and another merchant's certificate, are named")
    func appleRefusals() async throws {
        try await Self.withSetup { setup in
            try setup.merchant { $0["domains"] = ["localhost", "shop.unregistered.example"] }
            let (status, lines) = try await setup.doctor()
            #expect(status == 1)
            #expect(lines.contains { $0.hasPrefix("✓ merchant.dev.orchard.demo session localhost") })
            #expect(
                lines.contains {
                    $0.hasPrefix(
                        "✗ merchant.dev.orchard.demo session shop.unregistered.example: Apple does not know this domain for the merchant")
                })
        }
        try await Self.withSetup { setup in
            let other = try setup.environment.material.pki.issueMerchantIdentity(merchantIdentifier: "merchant.dev.orchard.other")
            try setup.useIdentity(other, named: "other")
            let (status, lines) = try await setup.doctor()
            #expect(status == 1)
            #expect(
                lines.contains {
                    $0.hasPrefix("✗ merchant.dev.orchard.demo merchant ID: the identity certificate is for another merchant ID")
                })
            #expect(
                lines.contains {
                    $0.hasPrefix("✗ merchant.dev.orchard.demo session localhost: the identity certificate belongs to another merchant ID")
                })
        }
        // A merchant ID Apple does not know, with its own certificate.
        try await Self.withSetup { setup in
            let unknown = "merchant.dev.orchard.unknown"
            let identity = try setup.environment.material.pki.issueMerchantIdentity(merchantIdentifier: unknown)
            try setup.useIdentity(identity, named: "unknown", merchantIdentifier: unknown)
            let (status, lines) = try await setup.doctor()
            #expect(status == 1)
            #expect(lines.contains("✓ \(unknown) merchant ID: the certificate is \(unknown)'s"))
            #expect(lines.contains { $0.hasPrefix("✗ \(unknown) session localhost: Apple does not know this merchant ID") })
        }
        // A certificate from a CA the gateway does not trust: the TLS handshake fails.
        try await Self.withSetup { setup in
            let stranger = try TestPKI.make(commonName: "Not Apple").issueMerchantIdentity(
                merchantIdentifier: DemoEnvironment.merchantIdentifier)
            try setup.useIdentity(stranger, named: "stranger")
            let (status, lines) = try await setup.doctor()
            #expect(status == 1)
            #expect(
                lines.contains { $0.hasPrefix("✗ merchant.dev.orchard.demo session localhost: the TLS connection to Apple failed") },
                "\(lines)")
        }
    }

    @Test("broken setups: swapped certificates, a wrong key, an expired identity, a wrong processing key; serve's refusals twice")
    func brokenSetups() async throws {
        try await Self.withSetup { setup in
            let demo = setup.environment
            let expired = try demo.material.pki.issueMerchantIdentity(
                merchantIdentifier: DemoEnvironment.merchantIdentifier, notValidBefore: Date(timeIntervalSinceNow: -800 * 86_400),
                notValidAfter: Date(timeIntervalSinceNow: -86_400))
            try expired.write(certificateTo: setup.directory.path("expired.pem"), keyTo: setup.directory.path("expired.key"))
            let processing = try demo.material.pki.issueProcessingCertificate(
                merchantIdentifier: DemoEnvironment.merchantIdentifier, publicKey: expired.certificate.publicKey)
            try Data(try processing.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: setup.directory.path("processing.pem")))
            let cases: [(String, (inout [String: Any]) -> Void, String)] = [
                (
                    "swapped",
                    {
                        $0["identityCertificate"] = setup.directory.path("processing.pem")
                        $0["identityKey"] = setup.directory.path("expired.key")
                    },
                    "✗ merchant.dev.orchard.demo identity: \(setup.directory.path("processing.pem")) (\"Apple Pay Payment Processing:merchant.dev.orchard.demo\"): this is a Payment Processing certificate"
                ),
                ("wrong key", { $0["identityKey"] = setup.directory.path("expired.key") }, "does not match the certificate"),
                (
                    "expired",
                    {
                        $0["identityCertificate"] = setup.directory.path("expired.pem")
                        $0["identityKey"] = setup.directory.path("expired.key")
                    },
                    "certificate expired on"
                ),
                (
                    "wrong processing key",
                    {
                        $0["processingKeys"] = [
                            ["privateKey": "test-processing-ec.key", "certificate": setup.directory.path("foreign.pem")]
                        ]
                    },
                    "✗ merchant.dev.orchard.demo processing key 1: publicKeyHash "
                ),
            ]
            _ = try demo.processingKeys()
            let ecKey = try Certificate.PrivateKey(pemEncoded: String(contentsOfFile: demo.ecProcessingKeyFile, encoding: .utf8))
            let foreign = try demo.material.pki.issueProcessingCertificate(
                merchantIdentifier: "merchant.dev.orchard.other", publicKey: ecKey.publicKey)
            try Data(try foreign.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: setup.directory.path("foreign.pem")))
            let original = try Data(contentsOf: URL(fileURLWithPath: setup.configuration))
            for (name, change, expected) in cases {
                try original.write(to: URL(fileURLWithPath: setup.configuration))
                try setup.merchant(change)
                let (status, lines) = try await setup.doctor(live: false)
                #expect(status == 1, "\(name)")
                let failed = lines.filter { $0.hasPrefix("✗") }
                // What serve refuses is ✗ first as serve's loader says it, then on the piece's own line;
                // a processing certificate for another merchant ID is doctor's alone (serve loads it).
                let piece = try #require(failed.last, "\(name): \(lines)")
                #expect(piece.contains(expected), "\(name): \(lines)")
                if name == "wrong processing key" {
                    #expect(failed.count == 1, "\(name): \(lines)")
                } else {
                    let detail = piece.split(separator: ": ", maxSplits: 1).last.map(String.init) ?? ""
                    #expect(failed == ["✗ configuration load: \(detail)", piece], "\(name): \(lines)")
                }
            }
        }
    }

    @Test("--domains fetches each domain's file as Apple does: byte for byte, a redirect, other bytes, missing, untrusted TLS")
    func domains() async throws {
        try await Self.withSetup { setup in
            let association = [UInt8](
                try Data(contentsOf: URL(fileURLWithPath: setup.environment.file("apple-developer-merchantid-domain-association"))))
            let names = ["shop.example", "redirect.example", "wrong.example", "missing.example"]
            // TLS checks each domain's own name, as Apple's fetch does, though the connection goes to loopback.
            let host = try MockDomainHost(
                serverIdentity: try setup.environment.material.pki.issueServerCertificate(hosts: names),
                pages: [
                    "shop.example": .file(association, contentType: "application/octet-stream"),
                    "redirect.example": .redirect("https://www.redirect.example/.well-known/apple-developer-merchantid-domain-association"),
                    "wrong.example": .file(Array("<html>shop</html>".utf8), contentType: "text/html"),
                ])
            let port = try await host.start()
            defer { Task { await host.stop() } }
            try setup.merchant { $0["domains"] = names }
            let connect = names.flatMap { ["--connect-to", "\($0)=https://127.0.0.1:\(port)"] }
            let result = try await OrchardProcess.run(
                ["doctor", "--config", setup.configuration, "--domains", "--ca-file", setup.environment.caFile] + connect)
            let lines = String(decoding: result.stdout, as: UTF8.self).split(separator: "\n").map(String.init)
            #expect(result.status == 1)
            let url = { (domain: String) in "https://\(domain)/.well-known/apple-developer-merchantid-domain-association" }
            #expect(
                lines.contains(
                    "✓ merchant.dev.orchard.demo domain shop.example: \(url("shop.example")) serves the association file byte for byte (application/octet-stream)"
                ), "\(lines)")
            #expect(
                lines.contains {
                    $0.hasPrefix(
                        "✗ merchant.dev.orchard.demo domain redirect.example: \(url("redirect.example")) redirects (HTTP 301) to https://www.redirect.example/"
                    )
                })
            #expect(
                lines.contains {
                    $0.hasPrefix(
                        "✗ merchant.dev.orchard.demo domain wrong.example: \(url("wrong.example")) serves 17 bytes (text/html) that differ")
                })
            #expect(
                lines.contains {
                    $0.hasPrefix("✗ merchant.dev.orchard.demo domain missing.example: \(url("missing.example")) is not found")
                })

            let untrusted = try await OrchardProcess.run(
                ["doctor", "--config", setup.configuration, "--domains", "--connect-to", "shop.example=https://127.0.0.1:\(port)"])
            let refused = String(decoding: untrusted.stdout, as: UTF8.self)
            #expect(
                refused.contains("✗ merchant.dev.orchard.demo domain shop.example: \(url("shop.example")) cannot be fetched: "),
                "\(refused)")
        }
    }

    @Test("--domains fetches over https straight from the domain, whatever HTTPS_PROXY or ALL_PROXY say")
    func domainsIgnoreEnvironmentProxies() async throws {
        try await Self.withSetup { setup in
            let recorder = ConnectionRecorder()
            try await recorder.start()
            defer { Task { await recorder.stop() } }
            let association = [UInt8](
                try Data(contentsOf: URL(fileURLWithPath: setup.environment.file("apple-developer-merchantid-domain-association"))))
            let host = try MockDomainHost(
                serverIdentity: try setup.environment.material.pki.issueServerCertificate(hosts: ["shop.example"]),
                pages: ["shop.example": .file(association, contentType: "application/octet-stream")])
            let port = try await host.start()
            defer { Task { await host.stop() } }
            try setup.merchant { $0["domains"] = ["shop.example"] }
            var environment = ProcessInfo.processInfo.environment
            for name in ["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"] { environment[name] = recorder.url }
            environment["no_proxy"] = nil
            environment["NO_PROXY"] = nil
            let result = try await OrchardProcess.run(
                [
                    "doctor", "--config", setup.configuration, "--domains", "--ca-file", setup.environment.caFile, "--connect-to",
                    "shop.example=https://127.0.0.1:\(port)",
                ], environment: environment)
            let output = String(decoding: result.stdout, as: UTF8.self)
            #expect(
                output.contains(
                    "domain shop.example: https://shop.example/.well-known/apple-developer-merchantid-domain-association serves the association file byte for byte"
                ), "\(output)")
            #expect(recorder.connections == 0)
        }
    }
}
