import Foundation
import OrchardTesting
import Testing

@Suite("orchard certs as a process")
struct CertsCommandTests {
    @Test("csr writes a 0600 key and a CSR and will not overwrite them; inspect --json reads them back; import refuses a foreign key")
    func csrInspectImport() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let out = directory.path("keys")
        let made = try await OrchardProcess.run([
            "certs", "csr", "--type", "identity", "--merchant-id", "merchant.com.example", "--out", out,
        ])
        #expect(made.status == 0, "\(made.stderr)")
        let attributes = try FileManager.default.attributesOfItem(atPath: out + "/identity.key")
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(try String(contentsOfFile: out + "/identity.csr", encoding: .utf8).hasPrefix("-----BEGIN CERTIFICATE REQUEST-----"))

        let again = try await OrchardProcess.run([
            "certs", "csr", "--type", "identity", "--merchant-id", "merchant.com.example", "--out", out,
        ])
        #expect(again.status == 1)
        #expect(again.stderr.contains("--force"))

        let inspected = try await OrchardProcess.run(["certs", "inspect", out + "/identity.key", "--json"])
        #expect(inspected.status == 0)
        let json = try JSONSerialization.jsonObject(with: Data(inspected.stdout)) as? [String: Any]
        #expect((json?["privateKey"] as? [String: Any])?["type"] as? String == "RSA")

        try TestMaterial.shared.identity.write(certificateTo: directory.path("cert.pem"), keyTo: directory.path("cert.key"))
        let foreign = try await OrchardProcess.run([
            "certs", "import", "--cer", directory.path("cert.pem"), "--key", out + "/identity.key", "--out", directory.path("out.pem"),
        ])
        #expect(foreign.status == 1)
        #expect(foreign.stderr.contains("does not match"))
        #expect(!FileManager.default.fileExists(atPath: directory.path("out.pem")))

        let imported = try await OrchardProcess.run([
            "certs", "import", "--cer", directory.path("cert.pem"), "--key", directory.path("cert.key"), "--out", directory.path("out.pem"),
        ])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(String(decoding: imported.stdout, as: UTF8.self).contains("identity certificate"))

        let junk = try await OrchardProcess.run(["certs", "inspect", directory.path("missing.p12")])
        #expect(junk.status == 1)
        #expect(junk.stderr.split(separator: "\n").count == 1)
    }

    @Test("inspect shows the publicKeyHash that Apple's real EC_v1 token to that processing certificate carries")
    func inspectNamesTheTokensHash() async throws {
        let certificate = OrchardProcess.repositoryRoot.appendingPathComponent("Tests/ApplePayTests/Fixtures/gala-2021/certificate.pem")
        let inspected = try await OrchardProcess.run(["certs", "inspect", certificate.path])
        let text = String(decoding: inspected.stdout, as: UTF8.self)
        #expect(inspected.status == 0, "\(inspected.stderr)")
        #expect(text.contains("kind         processing"), "\(text)")
        #expect(text.contains("key hash     +9VwJrqieiPF2ZRB0xHFYhgQ6RYza5hfrVLpdB1KtKI="), "\(text)")
        #expect(text.contains("no private key in this file"), "\(text)")
    }

    @Test(
        "csr --type order-type takes --order-type-id and writes order-type.key and .csr; inspect names the issued certificate orderType; rotate refuses the type"
    )
    func orderType() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let out = directory.path("keys")
        let made = try await OrchardProcess.run([
            "certs", "csr", "--type", "order-type", "--order-type-id", "order.com.example.shop", "--out", out,
        ])
        #expect(made.status == 0, "\(made.stderr)")
        #expect(String(decoding: made.stdout, as: UTF8.self).contains("Order Type ID Certificate → order.com.example.shop"))
        #expect(
            FileManager.default.fileExists(atPath: out + "/order-type.key")
                && FileManager.default.fileExists(atPath: out + "/order-type.csr"))

        let wrongOption = try await OrchardProcess.run([
            "certs", "csr", "--type", "order-type", "--merchant-id", "merchant.com.example", "--out", directory.path("other"),
        ])
        #expect(wrongOption.status != 0 && wrongOption.stderr.contains("takes --order-type-id"), "\(wrongOption.stderr)")

        let issued = try TestMaterial.shared.pki.issueOrderTypeIdentity(orderTypeIdentifier: "order.com.example.shop")
        try issued.leaf.write(certificateTo: directory.path("order.pem"), keyTo: directory.path("order.key"))
        let inspected = try await OrchardProcess.run(["certs", "inspect", directory.path("order.pem")])
        #expect(String(decoding: inspected.stdout, as: UTF8.self).contains("kind         orderType"), "\(inspected.stderr)")

        let rotate = try await OrchardProcess.run(["certs", "rotate", "csr", "--type", "order-type", "--merchant", "merchant.x"])
        #expect(rotate.status != 0 && rotate.stderr.contains("a rotation covers a merchant's identity and processing certificates"))
    }
}
