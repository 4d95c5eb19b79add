import CurlClient
import Foundation
import OrchardTesting
import Testing

@Suite("libcurl mTLS client against the mock gateway")
struct CurlClientTests {
    static let body = Array(
        #"{"merchantIdentifier":"merchant.dev.orchard.test","displayName":"Test","initiative":"web","initiativeContext":"shop.example"}"#
            .utf8)

    func sessionRequest(_ fixture: GatewayFixture, identity: TLSIdentity?, timeouts: CurlTimeouts? = nil) throws -> CurlRequest {
        CurlRequest(
            method: "POST",
            url: fixture.baseURL + "/paymentservices/paymentSession",
            headers: [(name: "Content-Type", value: "application/json")],
            body: Self.body,
            identity: identity,
            trust: .caPEM(fixture.material.caPEM),
            timeouts: timeouts)
    }

    func pemIdentity(_ material: TestMaterial) throws -> TLSIdentity {
        .pem(certificate: Array(try material.identity.certificatePEM.utf8), key: Array(try material.identity.keyPEM.utf8))
    }

    @Test("a session over mutual TLS with an in-memory PEM identity")
    func sessionWithPEMBytes() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let response = try await client.execute(try sessionRequest(fixture, identity: try pemIdentity(fixture.material)))
        #expect(response.status == 200)
        #expect(response.header("content-type") == "application/json")
        let session = try JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]
        #expect(session?["domainName"] as? String == "shop.example")
        #expect((session?["merchantSessionIdentifier"] as? String)?.hasPrefix("SSH") == true)
        #expect(fixture.gateway.stats.tlsHandshakes == 1)
    }

    @Test("PEM files and PKCS#12 identities work too")
    func identityFromFiles() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let temporary = try TemporaryDirectory()
        defer { temporary.remove() }
        let directory = temporary.url
        let cert = directory.appendingPathComponent("identity.pem").path
        let key = directory.appendingPathComponent("identity.key").path
        try fixture.material.identity.write(certificateTo: cert, keyTo: key)

        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let fromFiles = try await client.execute(try sessionRequest(fixture, identity: .pemFiles(certificate: cert, key: key)))
        #expect(fromFiles.status == 200)

        // A PKCS#12 bundle with a passphrase, made by the openssl command line tool.
        let p12 = directory.appendingPathComponent("identity.p12").path
        let openssl = try await OrchardProcess.tool(
            "openssl", ["pkcs12", "-export", "-in", cert, "-inkey", key, "-out", p12, "-passout", "pass:s3cret"])
        #expect(openssl.status == 0)
        let fromP12 = try await client.execute(try sessionRequest(fixture, identity: .pkcs12File(p12, passphrase: "s3cret")))
        #expect(fromP12.status == 200)
        let p12Bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: p12)))
        let fromP12Bytes = try await client.execute(try sessionRequest(fixture, identity: .pkcs12(p12Bytes, passphrase: "s3cret")))
        #expect(fromP12Bytes.status == 200)

        // A fresh client: the first one would reuse its open connection for the same certificate.
        let fresh = try CurlHTTPClient()
        defer { fresh.shutdown() }
        let wrong = await #expect(throws: CurlError.self) {
            _ = try await fresh.execute(try sessionRequest(fixture, identity: .pkcs12File(p12, passphrase: "wrong")))
        }
        #expect(wrong?.kind == .tls)
    }

    @Test("the mock refuses a client without a certificate")
    func noClientCertificate() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(try sessionRequest(fixture, identity: nil))
        }
        #expect(error?.kind == .tls || error?.kind == .connectionLost)
        #expect(error?.curlCode != 0)
        #expect(fixture.gateway.stats.tlsHandshakes == 0)
        #expect(fixture.gateway.stats.requests == 0)
    }

    @Test("a certificate from another CA is refused")
    func untrustedClientCertificate() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let otherPKI = try TestPKI.make(commonName: "Someone else's CA")
        let stranger = try otherPKI.issueMerchantIdentity(merchantIdentifier: TestMaterial.merchantIdentifier)
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        await #expect(throws: CurlError.self) {
            _ = try await client.execute(
                try sessionRequest(
                    fixture, identity: .pem(certificate: Array(try stranger.certificatePEM.utf8), key: Array(try stranger.keyPEM.utf8))))
        }
        #expect(fixture.gateway.stats.requests == 0)
    }

    @Test("the server's certificate must chain to the configured CA")
    func untrustedServer() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        var request = try sessionRequest(fixture, identity: try pemIdentity(fixture.material))
        request.trust = .system
        let error = await #expect(throws: CurlError.self) { _ = try await client.execute(request) }
        #expect(error?.kind == .tls)
        #expect(error?.curlCode == 60)
    }

    @Test("50 sequential calls reuse one TLS connection")
    func connectionReuse() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let identity = try pemIdentity(fixture.material)
        var opened = 0
        for _ in 0..<50 {
            let response = try await client.execute(try sessionRequest(fixture, identity: identity))
            #expect(response.status == 200)
            opened += response.newConnections
        }
        #expect(fixture.gateway.stats.requests == 50)
        #expect(fixture.gateway.stats.tlsHandshakes <= 2)
        #expect(fixture.gateway.stats.connections <= 2)
        #expect(opened == fixture.gateway.stats.connections)
        #expect(client.connectionsOpened == opened)
    }

    @Test("the server's certificates only when asked, each read from a handshake of its own")
    func peerCertificates() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let identity = try pemIdentity(fixture.material)
        let plain = try await client.execute(try sessionRequest(fixture, identity: identity))
        #expect(plain.status == 200 && plain.peerCertificates.isEmpty)
        var asked = try sessionRequest(fixture, identity: identity)
        asked.readsPeerCertificates = true
        let served = try fixture.material.server.certificatePEM.trimmingCharacters(in: .whitespacesAndNewlines)
        for _ in 0..<2 {
            let response = try await client.execute(asked)
            #expect(response.status == 200 && response.newConnections == 1)
            #expect(response.peerCertificates.map { $0.trimmingCharacters(in: .whitespacesAndNewlines) } == [served])
        }
        // The plain request's connection is still there to reuse; the asked ones were not kept.
        let again = try await client.execute(try sessionRequest(fixture, identity: identity))
        #expect(again.newConnections == 0 && again.peerCertificates.isEmpty)
        #expect(fixture.gateway.stats.connections == 3)
    }

    @Test("connectTo connects elsewhere while TLS checks the URL's host")
    func connectTo() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let identity = try pemIdentity(fixture.material)
        // The gateway's certificate names localhost: reached through connectTo, the name holds.
        var named = try sessionRequest(fixture, identity: identity)
        named.url = "https://localhost/paymentservices/paymentSession"
        named.connectTo = "localhost:443:127.0.0.1:\(fixture.port)"
        #expect(try await client.execute(named).status == 200)
        // A name the certificate does not hold fails the check, though the address is the same.
        var unnamed = named
        unnamed.url = "https://gateway.example/paymentservices/paymentSession"
        unnamed.connectTo = "gateway.example:443:127.0.0.1:\(fixture.port)"
        await #expect(throws: CurlError.self) { _ = try await client.execute(unnamed) }
        #expect(fixture.gateway.stats.requests == 1)
    }

    @Test("a slow gateway hits the total timeout")
    func totalTimeout() async throws {
        // The gateway never answers: a call that ends, timed out, ended by its own timeout.
        let fixture = try await GatewayFixture.start()
        fixture.gateway.holdSessions()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(
                try sessionRequest(
                    fixture, identity: try pemIdentity(fixture.material),
                    timeouts: CurlTimeouts(connect: .milliseconds(300), total: .milliseconds(300))))
        }
        #expect(error?.kind == .timedOut)
        #expect(error?.curlCode == 28)
    }

    @Test("a slow body also hits the total timeout")
    func slowBody() async throws {
        let fixture = try await GatewayFixture.start(faults: MockGatewayFaults(slowBody: .seconds(3)))
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(
                try sessionRequest(
                    fixture, identity: try pemIdentity(fixture.material),
                    timeouts: CurlTimeouts(connect: .milliseconds(400), total: .milliseconds(400))))
        }
        #expect(error?.kind == .timedOut)
    }

    @Test("a reset connection is reported as lost")
    func reset() async throws {
        let fixture = try await GatewayFixture.start(faults: MockGatewayFaults(resetConnection: true))
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(try sessionRequest(fixture, identity: try pemIdentity(fixture.material)))
        }
        #expect(error?.kind == .connectionLost)
    }

    @Test("responses over the cap are refused")
    func responseCap() async throws {
        let fixture = try await GatewayFixture.start()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient(configuration: .init(maxResponseBytes: 64))
        defer { client.shutdown() }
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(try sessionRequest(fixture, identity: try pemIdentity(fixture.material)))
        }
        #expect(error?.kind == .responseTooLarge)
    }

    @Test("cancelling the task aborts the transfer promptly")
    func cancellation() async throws {
        // The gateway never answers: a call that returns, cancelled, was aborted by the cancellation.
        let fixture = try await GatewayFixture.start()
        fixture.gateway.holdSessions()
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let request = try sessionRequest(fixture, identity: try pemIdentity(fixture.material))
        let task = Task { try await client.execute(request) }
        // Cancelled once the gateway holds the request: the transfer is under way, not yet started or queued.
        #expect(try await Eventually.until { !fixture.gateway.receivedSessionRequests.isEmpty })
        task.cancel()
        let result = await task.result
        guard case .failure(let error as CurlError) = result else {
            Issue.record("expected a CurlError, got \(result)")
            return
        }
        #expect(error.kind == .cancelled)
    }

    @Test("only allowed schemes, sane timeouts and clean headers are accepted")
    func invalidRequests() async throws {
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let plain = await #expect(throws: CurlError.self) {
            _ = try await client.execute(CurlRequest(url: "http://127.0.0.1:9/"))
        }
        #expect(plain?.kind == .invalidRequest)
        let tooLong = await #expect(throws: CurlError.self) {
            _ = try await client.execute(CurlRequest(url: "https://127.0.0.1:9/", timeouts: CurlTimeouts(total: .seconds(31))))
        }
        #expect(tooLong?.kind == .invalidRequest)
        let injected = await #expect(throws: CurlError.self) {
            _ = try await client.execute(CurlRequest(url: "https://127.0.0.1:9/", headers: [(name: "X", value: "a\r\nHost: evil")]))
        }
        #expect(injected?.kind == .invalidRequest)
        #expect(throws: CurlError.self) { _ = try CurlHTTPClient(configuration: .init(allowedSchemes: ["ftp"])) }
    }

    @Test("concurrent requests all complete")
    func concurrency() async throws {
        let fixture = try await GatewayFixture.start(faults: MockGatewayFaults(latency: .milliseconds(20)))
        defer { Task { await fixture.gateway.stop() } }
        let client = try CurlHTTPClient()
        defer { client.shutdown() }
        let request = try sessionRequest(fixture, identity: try pemIdentity(fixture.material))
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<32 { group.addTask { try await client.execute(request).status } }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses == Array(repeating: 200, count: 32))
        #expect(fixture.gateway.stats.requests == 32)
    }

    @Test("after shutdown, requests fail with a shutdown error instead of hanging")
    func shutdown() async throws {
        let client = try CurlHTTPClient()
        client.shutdown()
        let error = await #expect(throws: CurlError.self) {
            _ = try await client.execute(CurlRequest(url: "https://127.0.0.1:9/"))
        }
        #expect(error?.kind == .shutdown)
    }
}
