import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardTesting
import SwiftASN1
import Testing
import X509

/// `orchard certs rotate` as an operator runs it, on the demo merchant with the test PKI standing
/// in for Apple's CA, against a real `orchard serve` restarted between the steps.
@Suite("orchard certs rotate")
struct CertsRotateTests {
    static let merchant = DemoEnvironment.merchantIdentifier

    /// The demo's configuration with one processing key, A, and its processing certificate.
    struct Setup {
        let directory: TemporaryDirectory
        let environment: DemoEnvironment
        let configuration: String
        let keyA: P256.KeyAgreement.PrivateKey

        init(gatewayPort: Int = 9) throws {
            directory = try TemporaryDirectory()
            environment = try DemoEnvironment.prepare(directory: directory.path("demo"))
            configuration = try environment.writeServerConfiguration(
                gatewayPort: gatewayPort, serverPort: 0, publicDirectory: nil, catalogue: try environment.builtInCatalogue())
            keyA = P256.KeyAgreement.PrivateKey()
            try Data(keyA.pemRepresentation.utf8).write(to: URL(fileURLWithPath: environment.file("a.key")))
            let certificate = try environment.material.pki.issueProcessingCertificate(
                merchantIdentifier: CertsRotateTests.merchant, publicKey: try Self.publicKey(keyA))
            try Data(try certificate.serializeAsPEM().pemString.utf8).write(to: URL(fileURLWithPath: environment.file("a.pem")))
            var json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configuration))) as? [String: Any])
            var merchants = try #require(json["merchants"] as? [[String: Any]])
            merchants[0]["processingKeys"] = [["privateKey": "a.key", "certificate": "a.pem"]]
            json["merchants"] = merchants
            try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                .write(to: URL(fileURLWithPath: configuration))
        }

        /// Points the configuration at a mock gateway on `port`.
        func useGateway(port: Int) throws {
            var json = try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: configuration))) as? [String: Any])
            var gateway = try #require(json["appleGateway"] as? [String: Any])
            gateway["baseURL"] = "https://127.0.0.1:\(port)"
            json["appleGateway"] = gateway
            try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
                .write(to: URL(fileURLWithPath: configuration))
        }

        func merchantJSON() throws -> [String: Any] {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            return try #require((json["merchants"] as? [[String: Any]])?.first)
        }

        static func publicKey(_ key: P256.KeyAgreement.PrivateKey) throws -> Certificate.PublicKey {
            Certificate.PublicKey(try P256.Signing.PublicKey(rawRepresentation: key.publicKey.rawRepresentation))
        }

        func rotate(_ step: String, type: String = "processing", _ extra: [String] = []) async throws -> (
            status: Int32, stdout: String, stderr: String
        ) {
            let result = try await OrchardProcess.run(
                ["certs", "rotate", step, "--type", type, "--merchant", CertsRotateTests.merchant, "--config", configuration] + extra)
            return (result.status, String(decoding: result.stdout, as: UTF8.self), result.stderr)
        }

        var text: String { (try? String(contentsOfFile: configuration, encoding: .utf8)) ?? "" }

        func processingKeys() throws -> [[String: String]] {
            let json = try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
            let merchants = try #require(json["merchants"] as? [[String: Any]])
            return merchants[0]["processingKeys"] as? [[String: String]] ?? []
        }

        /// The rotation's folder (the one holding `<type>.csr`).
        func rotationFolder(_ type: String = "processing") throws -> String {
            let root = environment.file("rotation")
            let name = try #require(
                try FileManager.default.contentsOfDirectory(atPath: root).first {
                    $0.hasPrefix("\(CertsRotateTests.merchant).\(type).") && !$0.hasSuffix(".json")
                })
            return root + "/" + name
        }

        /// "Apple" signs the CSR in the rotation folder: a certificate of `kind` for the CSR's key.
        func sign(_ type: String = "processing", merchantIdentifier: String = CertsRotateTests.merchant, to name: String) throws -> String {
            let csr = try CertificateSigningRequest(
                pemEncoded: String(contentsOfFile: try rotationFolder(type) + "/\(type).csr", encoding: .utf8))
            let pki = environment.material.pki
            let certificate =
                type == "processing"
                ? try pki.issueProcessingCertificate(merchantIdentifier: merchantIdentifier, publicKey: csr.publicKey)
                : try pki.issueMerchantIdentity(merchantIdentifier: merchantIdentifier, publicKey: csr.publicKey)
            return try write(certificate, name)
        }

        /// Writes `certificate` as DER, as Apple's .cer is.
        func write(_ certificate: Certificate, _ name: String) throws -> String {
            var serializer = DER.Serializer()
            try serializer.serialize(certificate)
            let path = directory.path(name)
            try Data(serializer.serializedBytes).write(to: URL(fileURLWithPath: path))
            return path
        }
    }

    /// A running `orchard serve` on the setup's configuration.
    final class Server: Sendable {
        let child: ChildProcess
        let port: Int
        let client: CurlHTTPClient

        init(_ setup: Setup, client: CurlHTTPClient) async throws {
            let log = setup.directory.path("server-\(UUID().uuidString).log")
            child = try ChildProcess(
                OrchardProcess.orchard.path, ["serve", "--config", setup.configuration, "--log-level", "warning"], output: .file(log))
            let child = child
            let found = try await Eventually.value { () async -> Int? in
                for candidate in LoopbackPort.listening(pid: child.pid).sorted() {
                    let health = try? await client.execute(CurlRequest(url: "http://127.0.0.1:\(candidate)/health"))
                    if health?.status == 200 { return candidate }
                }
                return child.isRunning ? nil : -1
            }
            guard let found, found > 0 else {
                child.send(SIGKILL)
                _ = await child.waitOffPool()
                let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
                Issue.record("orchard serve did not start: \(output.suffix(2000))")
                throw CancellationError()
            }
            port = found
            self.client = client
        }

        func stop() async {
            child.send(SIGTERM)
            _ = await child.waitOffPool()
        }

        func send(_ path: String, _ body: String) async throws -> CurlResponse {
            try await client.execute(
                CurlRequest(
                    method: "POST", url: "http://127.0.0.1:\(port)\(path)",
                    headers: [(name: "Host", value: "localhost"), (name: "Content-Type", value: "application/json")], body: Array(body.utf8)
                ))
        }

        /// An order, paid with a token encrypted to `key`: the authorize answer.
        func pay(with key: P256.KeyAgreement.PublicKey, minter: TokenMinter) async throws -> CurlResponse {
            let order = try await send("/api/orders", #"{"items": [{"productId": "apple-box", "quantity": 1}]}"#)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(order.body)) as? [String: Any], "\(order.status)")
            let id = try #require(json["orderId"] as? String)
            let request = try #require(json["paymentRequest"] as? [String: Any])
            let total = try #require((request["total"] as? [String: Any])?["amount"] as? String)
            let amount = try #require(Int(total.replacingOccurrences(of: ".", with: "")))
            let applicationData = try #require(Data(base64Encoded: request["applicationData"] as? String ?? ""))
            let token = try minter.mintEC(
                payload: TokenMinter.samplePayload(amount: amount), to: key, merchantIdentifier: CertsRotateTests.merchant,
                applicationDataHash: Array(SHA256.hash(data: applicationData)))
            let tokenJSON = String(decoding: try JSONEncoder().encode(PaymentToken(paymentData: token)), as: UTF8.self)
            return try await send("/api/apple-pay/authorize", #"{"orderId": "\#(id)", "payment": {"token": \#(tokenJSON)}}"#)
        }
    }

    @Test("a processing key is rotated while tokens for both keys decrypt; each step refuses to run out of order")
    func processingRotation() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http"]))
        defer { client.shutdown() }
        let minter = TokenMinter(chain: try setup.environment.tokenChain())
        let keyA = setup.keyA.publicKey

        var server = try await Server(setup, client: client)
        let first = try await server.pay(with: keyA, minter: minter)
        #expect(first.status == 200, "key A: \(String(decoding: first.body, as: UTF8.self))")

        // Out of order: nothing to import, prove or retire yet.
        for step in ["import", "prove", "retire"] {
            let early = try await setup.rotate(step, step == "import" ? ["--cer", setup.environment.file("a.pem")] : [])
            #expect(early.status == 1 && early.stderr.contains("rotate csr"), "\(step): \(early.stderr)")
        }
        let made = try await setup.rotate("csr")
        #expect(made.status == 0, "\(made.stderr)")
        #expect(made.stdout.contains("Apple Pay Payment Processing Certificate") && made.stdout.contains("rotate import"), "\(made.stdout)")
        let again = try await setup.rotate("csr")
        #expect(again.status == 1 && again.stderr.contains("under way"), "\(again.stderr)")

        // What Apple could send back that is not the new key's processing certificate.
        let original = setup.text
        let foreignKey = try setup.write(
            try setup.environment.material.pki.issueProcessingCertificate(
                merchantIdentifier: Self.merchant, publicKey: try Setup.publicKey(setup.keyA)),
            "foreign-key.cer")
        let identity = try setup.write(
            try setup.environment.material.pki.issueMerchantIdentity(merchantIdentifier: Self.merchant).certificate, "identity.cer")
        let otherMerchant = try setup.sign(merchantIdentifier: "merchant.dev.orchard.other", to: "other-merchant.cer")
        let refusals = [
            (foreignKey, "does not match"), (identity, "this is an identity certificate"), (otherMerchant, "merchant-ID extension"),
        ]
        for (cer, expected) in refusals {
            let refused = try await setup.rotate("import", ["--cer", cer])
            #expect(refused.status == 1 && refused.stderr.contains(expected), "\(cer): \(refused.stderr)")
            #expect(refused.stderr.split(separator: "\n").count == 1)
        }
        #expect(setup.text == original, "a refused import leaves the configuration as it was")

        let imported = try await setup.rotate("import", ["--cer", try setup.sign(to: "apple_pay.cer")])
        #expect(imported.status == 0, "\(imported.stderr)")
        #expect(imported.stdout.contains("restart every instance"), "\(imported.stdout)")
        let keys = try setup.processingKeys()
        #expect(keys.count == 2 && keys[0] == ["privateKey": "a.key", "certificate": "a.pem"], "\(keys)")
        let folder = try setup.rotationFolder()
        #expect(keys.last?["privateKey"].map { setup.environment.file($0) } == folder + "/processing.key")
        // The operator's file is as it was, but for the new entry; the old one is kept beside it.
        let added = try #require(setup.text.split(separator: "\n").first { $0.contains("rotation/") })
        #expect(setup.text.replacingOccurrences(of: ",\n" + added, with: "") == original, "\(setup.text)")
        #expect(try String(contentsOfFile: setup.configuration + ".before-processing-import", encoding: .utf8) == original)

        let early = try await setup.rotate("retire")
        #expect(early.status == 1 && early.stderr.contains("rotate prove"), "retire before the proof: \(early.stderr)")
        #expect(try setup.processingKeys().count == 2)

        let proven = try await setup.rotate("prove")
        #expect(proven.status == 0, "\(proven.stderr)")
        #expect(
            proven.stdout.contains("✓ \(Self.merchant) token for processing key 2: a token encrypted to publicKeyHash"), "\(proven.stdout)")

        // A certificate changed after the proof is not the one proven.
        let provenCertificate = try Data(contentsOf: URL(fileURLWithPath: folder + "/processing.pem"))
        try Data(
            try setup.environment.material.pki.issueProcessingCertificate(
                merchantIdentifier: Self.merchant, publicKey: try Setup.publicKey(setup.keyA)
            ).serializeAsPEM().pemString.utf8
        )
        .write(to: URL(fileURLWithPath: folder + "/processing.pem"))
        let changed = try await setup.rotate("retire")
        #expect(changed.status == 1 && changed.stderr.contains("is not the certificate that was proven"), "\(changed.stderr)")
        #expect(try setup.processingKeys().count == 2)
        try provenCertificate.write(to: URL(fileURLWithPath: folder + "/processing.pem"))

        let keyB = try P256.KeyAgreement.PrivateKey(pemRepresentation: String(contentsOfFile: folder + "/processing.key", encoding: .utf8))
            .publicKey
        // Restarted with both keys: tokens for A (still in flight) and for B (Apple switched) both pay.
        await server.stop()
        server = try await Server(setup, client: client)
        for key in [keyA, keyB] {
            let paid = try await server.pay(with: key, minter: minter)
            #expect(paid.status == 200, "\(String(decoding: paid.body, as: UTF8.self))")
        }

        let retired = try await setup.rotate("retire")
        #expect(retired.status == 0, "\(retired.stderr)")
        #expect(try setup.processingKeys().map { $0["privateKey"].map(setup.environment.file) } == [folder + "/processing.key"])
        let status = try await setup.rotate("status")
        #expect(status.stdout.contains("no processing rotation under way"), "\(status.stdout)")

        await server.stop()
        server = try await Server(setup, client: client)
        let paidB = try await server.pay(with: keyB, minter: minter)
        #expect(paidB.status == 200, "\(String(decoding: paidB.body, as: UTF8.self))")
        let refusedA = try await server.pay(with: keyA, minter: minter)
        let answer = String(decoding: refusedA.body, as: UTF8.self)
        #expect(refusedA.status == 400 && answer.contains("invalid_token") && answer.contains("unknownProcessingKey"), "\(answer)")
        await server.stop()
    }

    @Test("an identity is rotated: the new one gets a session from the gateway before the configuration switches to it")
    func identityRotation() async throws {
        let setup = try Setup()
        defer { setup.directory.remove() }
        let gateway = try setup.environment.makeGateway()
        let port = try await gateway.start()
        defer { Task { await gateway.stop() } }
        try setup.useGateway(port: port)
        let before = try setup.merchantJSON()

        #expect(try await setup.rotate("csr", type: "identity").status == 0)
        let proveEarly = try await setup.rotate("prove", type: "identity")
        #expect(proveEarly.status == 1 && proveEarly.stderr.contains("rotate import"), "\(proveEarly.stderr)")
        let csr = try CertificateSigningRequest(
            pemEncoded: String(contentsOfFile: try setup.rotationFolder("identity") + "/identity.csr", encoding: .utf8))
        let processingCertificate = try setup.environment.material.pki.issueProcessingCertificate(
            merchantIdentifier: Self.merchant, publicKey: csr.publicKey)
        let wrongKind = try await setup.rotate(
            "import", type: "identity", ["--cer", try setup.write(processingCertificate, "processing.cer")])
        #expect(wrongKind.status == 1 && wrongKind.stderr.contains("this is a processing certificate"), "\(wrongKind.stderr)")

        // A certificate the gateway does not trust: import takes it (it is what it must be), the proof fails.
        let stranger = try TestPKI.make(commonName: "Not the gateway's CA").issueMerchantIdentity(
            merchantIdentifier: Self.merchant, publicKey: csr.publicKey)
        #expect(try await setup.rotate("import", type: "identity", ["--cer", try setup.write(stranger, "stranger.cer")]).status == 0)
        #expect(NSDictionary(dictionary: try setup.merchantJSON()) == NSDictionary(dictionary: before), "the switch waits for the proof")
        let failed = try await setup.rotate("prove", type: "identity")
        #expect(failed.status == 1 && failed.stdout.contains("✗ \(Self.merchant) session localhost"), "\(failed.stdout) \(failed.stderr)")
        let retireEarly = try await setup.rotate("retire", type: "identity")
        #expect(retireEarly.status == 1 && retireEarly.stderr.contains("rotate prove"), "\(retireEarly.stderr)")
        #expect(NSDictionary(dictionary: try setup.merchantJSON()) == NSDictionary(dictionary: before))

        // Starting over, as the refusal of csr says: the state file removed, a new key and CSR.
        try FileManager.default.removeItem(atPath: setup.environment.file("rotation/\(Self.merchant).identity.json"))
        try FileManager.default.removeItem(atPath: try setup.rotationFolder("identity"))
        #expect(try await setup.rotate("csr", type: "identity").status == 0)
        let imported = try await setup.rotate("import", type: "identity", ["--cer", try setup.sign("identity", to: "merchant_id.cer")])
        #expect(imported.status == 0, "\(imported.stderr)")
        // A token names a processing key by its publicKeyHash; an identity is no token's key.
        #expect(!imported.stdout.contains("publicKeyHash"), "\(imported.stdout)")
        let requests = gateway.receivedSessionRequests.count
        let proven = try await setup.rotate("prove", type: "identity")
        #expect(proven.status == 0, "\(proven.stdout) \(proven.stderr)")
        #expect(proven.stdout.contains("✓ \(Self.merchant) session localhost: Apple returned a merchant session"), "\(proven.stdout)")
        #expect(gateway.receivedSessionRequests.count > requests, "the gateway was asked")

        let folder = try setup.rotationFolder("identity")
        let retired = try await setup.rotate("retire", type: "identity")
        #expect(retired.status == 0, "\(retired.stderr)")
        let after = try setup.merchantJSON()
        #expect((after["identityCertificate"] as? String).map(setup.environment.file) == folder + "/identity.pem")
        #expect((after["identityKey"] as? String).map(setup.environment.file) == folder + "/identity.key")
        let doctor = try await OrchardProcess.run(["doctor", "--config", setup.configuration, "--live"])
        #expect(doctor.status == 0, "\(String(decoding: doctor.stdout, as: UTF8.self))")
    }
}
