import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// Instances sharing one database: a registration written by another instance (here, straight
/// into the store this server reads) is served here after a sync pass, and a deletion stops it.
@Suite("Registry changes from another instance are picked up")
struct RegistrySyncTests {
    static let domain = "sync-shop.example"

    /// The association file's status on `domain` once it is `status` (the sync pass runs every
    /// 2 s, but a machine running the whole suite on one core was seen to take over 5 s for it).
    func waitForAssociation(_ server: ServerHarness, status: Int) async throws -> Int {
        var last = 0
        _ = try await Eventually.until(every: .milliseconds(100)) {
            last = Int(try await server.send("GET", "/.well-known/apple-developer-merchantid-domain-association", host: Self.domain).status)
            return last == status
        }
        return last
    }

    @Test("a domain registered in the store by another instance is served after a sync pass, and stops being served once deleted")
    func picksUpRegistrations() async throws {
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants, environment: MoreMerchants.environment, configure: MoreMerchants.all
        ) { server in
            #expect(try await waitForAssociation(server, status: 404) == 404)
            let now = Date()
            try await server.store.saveRegistration(
                RegisteredMerchant(
                    partnerIdentifier: "sync-partner", name: "Sync Shop", encryptTo: TestMaterial.platformMerchantIdentifier,
                    merchantUrl: nil, domains: [Self.domain], createdAt: now, updatedAt: now))
            #expect(try await waitForAssociation(server, status: 200) == 200)
            let file = try await server.send("GET", "/.well-known/apple-developer-merchantid-domain-association", host: Self.domain)
            #expect(file.body == MoreMerchants.platformAssociation)

            try await server.store.deleteRegistration(partnerIdentifier: "sync-partner", at: Date())
            #expect(try await waitForAssociation(server, status: 404) == 404)
        }
    }
}
