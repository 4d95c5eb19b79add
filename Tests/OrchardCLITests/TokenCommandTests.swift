import Foundation
import OrchardTesting
import Testing

@Suite("orchard token decrypt and mint, as processes")
struct TokenCommandTests {
    static let fixtures = OrchardProcess.repositoryRoot.appendingPathComponent("Tests/ApplePayTests/Fixtures")

    func json(_ bytes: [UInt8]) -> NSDictionary? {
        try? JSONSerialization.jsonObject(with: Data(bytes)) as? NSDictionary
    }

    @Test("decrypts the real EC_v1 and RSA_v1 vectors at their signing time")
    func decryptVectors() async throws {
        for (folder, key, cert, at) in [
            ("gala-2021", "private_key.pem", "certificate.pem", "2021-09-01T19:04:00Z"),
            ("basis-theory-rsa", "private.key", "apple_pay.pem", "2024-01-08T17:55:00Z"),
        ] {
            let dir = Self.fixtures.appendingPathComponent(folder)
            let result = try await OrchardProcess.run([
                "token", "decrypt", "--token", dir.appendingPathComponent("token.json").path,
                "--key", dir.appendingPathComponent(key).path, "--cert", dir.appendingPathComponent(cert).path, "--at", at,
            ])
            #expect(result.status == 0, "\(result.stderr)")
            let expected =
                try JSONSerialization.jsonObject(with: Data(contentsOf: dir.appendingPathComponent("expected.json"))) as? [String: Any]
            #expect(json(result.stdout) == (expected?["plaintext"] as? NSDictionary))
        }
    }

    @Test("fails with exit 1 and one line: today (expired leaf), wrong merchant, unreadable key")
    func failures() async throws {
        let dir = Self.fixtures.appendingPathComponent("gala-2021")
        let base = ["token", "decrypt", "--token", dir.appendingPathComponent("token.json").path]
        let today = try await OrchardProcess.run(
            base + [
                "--key", dir.appendingPathComponent("private_key.pem").path, "--cert", dir.appendingPathComponent("certificate.pem").path,
            ])
        #expect(today.status == 1)
        #expect(today.stdout.isEmpty)
        #expect(today.stderr.hasPrefix("orchard: the signing certificate ") && today.stderr.split(separator: "\n").count == 1)

        let wrongMerchant = try await OrchardProcess.run(
            base + [
                "--key", dir.appendingPathComponent("private_key.pem").path, "--merchant-id", "merchant.wrong", "--at",
                "2021-09-01T19:04:00Z",
            ])
        #expect(wrongMerchant.status == 1)
        #expect(wrongMerchant.stderr.contains("does not decrypt"))

        let missing = try await OrchardProcess.run(base + ["--key", "/nonexistent.pem", "--merchant-id", "m"])
        #expect(missing.status == 1)
        #expect(missing.stderr == "orchard: /nonexistent.pem: cannot read the key file\n")

        // Neither --cert nor --merchant-id: the merchant ID is what is missing, nothing was given twice.
        let key = dir.appendingPathComponent("private_key.pem").path
        let neither = try await OrchardProcess.run(base + ["--key", key])
        #expect(neither.status == 1 && neither.stdout.isEmpty)
        #expect(
            neither.stderr
                == "orchard: the merchant ID is missing: give each --key its processing certificate with --cert (same order), or --merchant-id ID\n"
        )
        let cert = dir.appendingPathComponent("certificate.pem").path
        let both = try await OrchardProcess.run(base + ["--key", key, "--cert", cert, "--merchant-id", "m"])
        #expect(both.status == 1 && both.stderr == "orchard: give --cert or --merchant-id, not both\n", "\(both.stderr)")
        let uneven = try await OrchardProcess.run(base + ["--key", key, "--key", key, "--cert", cert])
        #expect(uneven.status == 1 && uneven.stderr == "orchard: give one --cert per --key (2 --key, 1 --cert), in the same order\n")
    }

    @Test("the production binary links none of the test doubles; the sandbox has them, and orchard has no demo or mint")
    func productionBinaryIsClean() async throws {
        // Swift mangles a module's name into every symbol it defines: `14OrchardTesting`.
        let marker = Data("14OrchardTesting".utf8)
        let production = try Data(contentsOf: OrchardProcess.orchard)
        let sandbox = try Data(contentsOf: OrchardProcess.sandbox)
        #expect(production.range(of: marker) == nil, "orchard links OrchardTesting")
        #expect(sandbox.range(of: marker) != nil, "the marker is found where the module is linked")
        #expect(try await OrchardProcess.run(["demo"]).status != 0)
        #expect(try await OrchardProcess.run(["token", "mint", "--amount", "1"]).status != 0)
        let help = try await OrchardProcess.run(["--help"])
        #expect(!String(decoding: help.stdout, as: UTF8.self).contains("mock-gateway"))
    }

    @Test("mint then decrypt round-trips, and only with the test root")
    func mintRoundTrip() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let minted = try await OrchardProcess.run(
            ["token", "mint", "--state-dir", directory.url.path, "--amount", "4321", "--leading-zero"],
            executable: OrchardProcess.sandbox)
        #expect(minted.status == 0, "\(minted.stderr)")
        try directory.write("token.json", minted.stdout)
        let decrypt = [
            "token", "decrypt", "--token", directory.path("token.json"), "--key", directory.path("test-processing-ec.key"),
            "--merchant-id", "merchant.dev.orchard.demo",
        ]
        let trusted = try await OrchardProcess.run(decrypt + ["--trust-root", directory.path("test-apple-root.pem")])
        #expect(trusted.status == 0, "\(trusted.stderr)")
        #expect(json(trusted.stdout)?["transactionAmount"] as? Int == 4321)
        let production = try await OrchardProcess.run(decrypt)
        #expect(production.status == 1)
        #expect(production.stderr.contains("do not chain to the trusted root"))
    }
}
