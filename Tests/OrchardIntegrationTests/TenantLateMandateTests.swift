import ApplePay
import Crypto
import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// A mandate cannot outlive its tenant: a first payment of an agreement sent just before its
/// merchant is retired and answered after creates no mandate a later tenant under the same
/// identifier lists or charges, and its credential is deleted at the processor.
@Suite("Tenants: a first payment answered after its merchant was retired leaves no mandate behind")
struct TenantLateMandateTests {
    typealias Tenants = TenantIsolationTests
    static let token = "DNITHE000000000000000079"

    /// The agreement's first payment on the partner's domain, as the page sends it: answered once
    /// the processor answers.
    static func payRecurring(_ server: ServerHarness, key: String) async throws -> CurlResponse {
        try await Tenants.authorizeRecurring(server, key: key, token: token, idempotencyKey: "late-1")
    }

    /// The partner registered, paying through the mock's Worldpay; its API key.
    static func onboard(_ server: ServerHarness, mock: MockProcessors) async throws -> String {
        let tenants = Tenants()
        #expect(try await tenants.register(server, Tenants.partner).status == 201)
        let account = ProcessorFixture.worldpay
        let settings = """
            {"processor": {"type": "worldpay", "baseURL": "\(mock.baseURL)",
                           "entity": "\(account.entity)", "username": "\(account.username)", "password": "\(account.password)"}}
            """
        #expect(try await tenants.admin(server, "PUT", "/admin/merchants/\(Tenants.partner)/settings", settings).status == 200)
        let key = try await tenants.admin(server, "POST", "/admin/merchants/\(Tenants.partner)/api-keys")
        return try #require(key.json?["secret"] as? String)
    }

    @Test(
        "hold the processor on a first agreement payment, unregister the last domain, release, register again: no mandate listed, the credential deleted",
        arguments: [false, true])
    func answeredAfterRetirement(registersBeforeTheAnswer: Bool) async throws {
        let mock = try MockProcessors(
            serverIdentity: TestMaterial.shared.server, worldpay: ProcessorFixture.worldpay, worldline: ProcessorFixture.worldline)
        try await mock.start()
        defer { Task { await mock.stop() } }
        try await ServerHarness.with(
            otherMockMerchants: MoreMerchants.mockMerchants,
            environment: MoreMerchants.environment.merging(["SETTINGS_KEY": Tenants.settingsKey]) { $1 },
            configure: { file, directory in
                try MoreMerchants.all(&file, directory)
                file.platformIntegrator?.settingsKey = "env:SETTINGS_KEY"
                file.outbound = RegisteredMerchantPaymentTests.loopbackForRegisteredMerchants(mock)
            }
        ) { server in
            let tenants = Tenants()
            let key = try await Self.onboard(server, mock: mock)
            // Worldpay authorizes and stores the credential, and its answer waits for the test.
            mock.answerNext([.awaitRelease])
            let paying = Task { try await Self.payRecurring(server, key: key) }
            #expect(try await Eventually.until { mock.awaitedAnswers == 1 })

            let gone = try await tenants.admin(
                server, "POST", "/admin/merchants/\(Tenants.partner)/unregister",
                #"{"domainNames": ["\#(Tenants.domain)"], "reason": "left"}"#)
            #expect(gone.status == 200, "\(gone.errorMessage ?? "")")
            if registersBeforeTheAnswer { #expect(try await tenants.register(server, Tenants.partner).status == 201) }
            // Answered within the tenant processor's 20 s timeout: the shopper's payment is authorized.
            mock.releaseAwaitedAnswers()
            let paid = try await paying.value
            #expect(paid.status == 200, "\(paid.errorMessage ?? "")")
            if !registersBeforeTheAnswer { #expect(try await tenants.register(server, Tenants.partner).status == 201) }

            // The new tenant under the same identifier lists no mandate, and cannot reach the old one.
            let newKey = try #require(
                try await tenants.admin(server, "POST", "/admin/merchants/\(Tenants.partner)/api-keys").json?["secret"] as? String)
            let listed = try await server.api("GET", "/v1/mandates", key: newKey)
            #expect(listed.status == 200 && (listed.json?["mandates"] as? [Any])?.isEmpty == true, "\(listed.json ?? [:])")
            let paymentId = try #require(paid.json?["paymentId"] as? String)
            let mandateId = try #require(try await server.store.payment(id: paymentId)?.mandateId)
            #expect(try await server.api("GET", "/v1/mandates/\(mandateId)", key: newKey).status == 404)
            let charge = try await server.api(
                "POST", "/v1/mandates/\(mandateId)/charges", key: newKey, json: #"{"amount": 990, "reference": "inv-late"}"#,
                idempotencyKey: "late-c1")
            #expect(charge.status == 404, "the new tenant cannot charge it")

            // It belongs to the retirement, has ended, and Worldpay deleted the credential it stored.
            let mandate = try #require(try await server.store.mandate(id: mandateId))
            #expect(RetiredTenant.isRecordKey(mandate.merchantIdentifier) && mandate.merchantIdentifier.contains(Tenants.partner))
            #expect(mandate.state == .ended && mandate.endedReason == TenantRetirement.endedReason)
            let issued = mock.storedTokens.map(\.reference)
            #expect(issued.count == 1 && issued == [mandate.credential.reference])
            #expect(mock.deletedTokens == issued, "the processor deleted the credential")
            #expect(mock.received.filter { $0.method == "DELETE" }.count == 1, "and was asked once")
        }
    }
}
