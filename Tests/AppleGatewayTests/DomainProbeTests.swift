import AppleGateway
import CurlClient
import Foundation
import OrchardCore
import OrchardTesting
import Testing
import X509

@Suite("The domain probe against a loopback shop: the answer as Apple gets it, and the certificate the handshake presented")
struct DomainProbeTests {
    static let file = Array("association file for merchant.dev.orchard.test\n".utf8)
    static let domains = ["shop.example", "redirect.example", "waf.example", "other.example", "missing.example"]

    /// A certificate for every test domain, from the shared test CA, ending at `notValidAfter`
    /// (whole seconds: X.509 times have no fraction).
    static func certificate(endingIn interval: TimeInterval, now: Date = Date()) throws -> (TestCertificate, Date) {
        let end = Date(timeIntervalSince1970: (now.timeIntervalSince1970 + interval).rounded(.down))
        return (try TestMaterial.shared.pki.issueServerCertificate(hosts: domains, now: now, notValidAfter: end), end)
    }

    /// A started host serving `pages` with `identity`, a probe connecting every domain to it, both stopped after `body`.
    static func with(
        _ identity: TestCertificate, chain: [Certificate] = [], pages: [String: MockDomainHost.Page],
        _ body: (MockDomainHost, CurlDomainProbe) async throws -> Void
    ) async throws {
        let host = try MockDomainHost(serverIdentity: identity, chain: chain, pages: pages)
        let port = try await host.start()
        let http = try CurlHTTPClient()
        let probe = CurlDomainProbe(
            http: http, trust: .caPEM(TestMaterial.shared.caPEM),
            connectTo: Dictionary(uniqueKeysWithValues: domains.map { ($0, "https://127.0.0.1:\(port)") }))
        do {
            try await body(host, probe)
        } catch {
            http.shutdown()
            await host.stop()
            throw error
        }
        http.shutdown()
        await host.stop()
    }

    @Test("status, content type, location, body and the leaf certificate's notAfter, exactly as served")
    func answers() async throws {
        let (identity, end) = try Self.certificate(endingIn: 5 * 86_400 + 17)
        let pages: [String: MockDomainHost.Page] = [
            "shop.example": .file(Self.file, contentType: "application/octet-stream"),
            "redirect.example": .response(
                status: 302, headers: [(name: "Location", value: "https://www.redirect.example/.well-known/x")], body: []),
            "waf.example": .response(
                status: 403, headers: [(name: "Content-Type", value: "text/html")], body: Array("<h1>blocked</h1>".utf8)),
            "other.example": .file(Array("<html>spa</html>".utf8), contentType: "text/html; charset=utf-8"),
        ]
        // The CA after the leaf, as servers send intermediates: the CA's later notAfter is not the domain's.
        try await Self.with(identity, chain: [TestMaterial.shared.pki.ca.certificate], pages: pages) { _, probe in
            let shop = try await probe.associationFile(of: "shop.example")
            #expect(shop.status == 200 && shop.contentType == "application/octet-stream" && shop.location == nil)
            #expect(shop.body == Self.file)
            #expect(shop.certificateNotValidAfter == end)
            #expect(end != TestMaterial.shared.pki.ca.certificate.notValidAfter)

            let redirect = try await probe.associationFile(of: "redirect.example")
            #expect(redirect.status == 302 && redirect.location == "https://www.redirect.example/.well-known/x")
            #expect(redirect.body.isEmpty && redirect.certificateNotValidAfter == end)

            let waf = try await probe.associationFile(of: "waf.example")
            #expect(waf.status == 403 && waf.contentType == "text/html" && waf.body == Array("<h1>blocked</h1>".utf8))

            let other = try await probe.associationFile(of: "other.example")
            #expect(other.status == 200 && other.contentType == "text/html; charset=utf-8" && other.body == Array("<html>spa</html>".utf8))

            let missing = try await probe.associationFile(of: "missing.example")
            #expect(missing.status == 404 && missing.certificateNotValidAfter == end)
        }
    }

    @Test("a page and a certificate swapped while the host runs: the next probe sees both, and the repair")
    func swaps() async throws {
        let (first, firstEnd) = try Self.certificate(endingIn: 40 * 86_400)
        let (renewed, renewedEnd) = try Self.certificate(endingIn: 6 * 86_400 + 3_601)
        let good = MockDomainHost.Page.file(Self.file, contentType: "application/octet-stream")
        try await Self.with(first, pages: ["shop.example": good]) { host, probe in
            let before = try await probe.associationFile(of: "shop.example")
            #expect(before.status == 200 && before.certificateNotValidAfter == firstEnd)

            try host.setServerIdentity(renewed)
            host.setPage(.status(403), for: "shop.example")
            let broken = try await probe.associationFile(of: "shop.example")
            #expect(broken.status == 403 && broken.body.isEmpty)
            #expect(broken.certificateNotValidAfter == renewedEnd)

            host.setPage(.redirect("https://shop.example/"), for: "shop.example")
            let redirected = try await probe.associationFile(of: "shop.example")
            #expect(redirected.status == 301 && redirected.location == "https://shop.example/")

            host.setPage(good, for: "shop.example")
            try host.setServerIdentity(first)
            let repaired = try await probe.associationFile(of: "shop.example")
            #expect(repaired.status == 200 && repaired.body == Self.file && repaired.certificateNotValidAfter == firstEnd)
            #expect(host.served == 4)
        }
    }

    @Test("an expired certificate fails the probe with TLS's reason, and a renewed one recovers it")
    func expired() async throws {
        let (expired, _) = try Self.certificate(endingIn: -3_600)
        let (renewed, renewedEnd) = try Self.certificate(endingIn: 90 * 86_400)
        try await Self.with(expired, pages: ["shop.example": .file(Self.file, contentType: "application/octet-stream")]) { host, probe in
            await #expect {
                _ = try await probe.associationFile(of: "shop.example")
            } throws: { error in
                guard let error = error as? GatewayError else { return false }
                return error.kind == .unreachable && error.message.contains("expired")
            }
            #expect(host.served == 0)
            try host.setServerIdentity(renewed)
            let recovered = try await probe.associationFile(of: "shop.example")
            #expect(recovered.status == 200 && recovered.certificateNotValidAfter == renewedEnd)
        }
    }

    @Test("connect-to keeps the domain for TLS: a certificate for the connected address only is refused")
    func nameCheckedAgainstDomain() async throws {
        let loopbackOnly = try TestMaterial.shared.pki.issueServerCertificate()
        try await Self.with(loopbackOnly, pages: ["shop.example": .file(Self.file, contentType: "application/octet-stream")]) {
            host, probe in
            await #expect(throws: GatewayError.self) { _ = try await probe.associationFile(of: "shop.example") }
            #expect(host.served == 0)
        }
    }

    @Test("a connect-to origin is https://host[:port] and nothing else")
    func origins() {
        #expect(CurlDomainProbe.hostAndPort("https://127.0.0.1:4443") == "127.0.0.1:4443")
        #expect(CurlDomainProbe.hostAndPort("https://staging.example") == "staging.example:443")
        #expect(CurlDomainProbe.hostAndPort("https://[::1]:8443/") == "[::1]:8443")
        #expect(CurlDomainProbe.hostAndPort("https://[::1]") == "[::1]:443")
        for bad in [
            "http://127.0.0.1:80", "https://", "https://a.example/path", "https://u@a.example", "https://a.example:0", "https://a:b:c",
        ] {
            #expect(CurlDomainProbe.hostAndPort(bad) == nil, "\(bad)")
        }
    }
}
