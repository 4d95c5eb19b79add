import Foundation
import OrchardCore
import OrchardTesting
import Testing

/// `store.postgres.tls` against a real PostgreSQL with TLS on (a cluster of its own: the shared
/// one has no TLS, which another test relies on). Its certificate is for `localhost` only.
@Suite("PostgreSQL store over TLS: verify-full checks the chain and the name, require only encrypts")
struct PostgresTLSTests {
    @Test(
        "verify-full opens only with the configured CA and a certificate naming the host; require opens without checking",
        .enabled(if: PostgresServer.enabled))
    func modes() async throws {
        let pki = try TestPKI.make()
        let server = try pki.issueServerCertificate(hosts: ["localhost"])
        let cluster = try await PostgresServer.dedicated(
            settings: ["ssl": "on", "ssl_cert_file": "server.crt", "ssl_key_file": "server.key"],
            files: ["server.crt": Array(try server.certificatePEM.utf8), "server.key": Array(try server.keyPEM.utf8)])
        defer { cluster.stop() }
        let caPEM = Array(try pki.ca.certificatePEM.utf8)
        func settings(host: String, _ mode: PostgresSettings.TLSMode, ca: [UInt8]?) -> PostgresSettings {
            PostgresSettings(
                endpoint: .tcp(host: host, port: cluster.port), database: "postgres", user: PostgresServer.user,
                password: Secret(cluster.password), tls: mode, caPEM: ca, poolSize: 1)
        }

        let verified = await PostgresOpenTests.openError(settings(host: "localhost", .verifyFull, ca: caPEM))
        #expect(verified == nil, "the configured CA and a certificate for localhost: \(verified ?? "")")

        let otherCA = Array(try TestPKI.make(commonName: "Another CA").ca.certificatePEM.utf8)
        let untrusted = await PostgresOpenTests.openError(settings(host: "localhost", .verifyFull, ca: otherCA))
        #expect(untrusted?.contains("does not chain to store.postgres.tls.caFile") == true, "another CA: \(untrusted ?? "opened")")
        let systemTrust = await PostgresOpenTests.openError(settings(host: "localhost", .verifyFull, ca: nil))
        #expect(systemTrust?.contains("does not chain") == true, "the system's CAs do not know the test CA: \(systemTrust ?? "opened")")
        let wrongName = await PostgresOpenTests.openError(settings(host: "127.0.0.1", .verifyFull, ca: caPEM))
        #expect(wrongName?.contains("does not name this host") == true, "it names localhost, not 127.0.0.1: \(wrongName ?? "opened")")

        let encrypted = await PostgresOpenTests.openError(settings(host: "127.0.0.1", .require, ca: nil))
        #expect(encrypted == nil, "require encrypts whoever answers: \(encrypted ?? "")")
    }
}
