import ApplePay
import CurlClient
import Foundation
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Synchronization
import Testing

extension GuardTests {
    /// The calls Apple applied for `partner`, oldest first: `register` or `unregister`.
    static func appleCalls(_ gateway: MockAppleGateway, partner: String) -> [String] {
        gateway.receivedRegistrationCalls.filter { String(decoding: $0.body, as: UTF8.self).contains("\"\(partner)\"") }.map {
            $0.path.hasSuffix("/unregisterMerchant") ? "unregister" : "register"
        }
    }

    @Test("an unregistration while Apple holds the guard's repair waits for it: no register reaches Apple after the delete")
    func noRepairAfterUnregistration() async throws {
        let logs = CapturingLogHandler()
        try await Self.with(registration: true, logHandler: logs) { rig in
            let (partner, domain) = ("tea-house", RegisteredMerchantPaymentTests.domain)
            let gateway = rig.server.gateway
            let registered = try await rig.server.send(
                "POST", "/admin/merchants",
                body: Array(
                    #"{"partnerInternalMerchantIdentifier": "\#(partner)", "partnerMerchantName": "Tea House", "domainNames": ["\#(domain)"]}"#
                        .utf8), extraHeaders: MoreMerchants.authorization)
            #expect(registered.status == 201)
            await rig.pass(after: 0)
            #expect(try await rig.record(.registration, partner)?.state == .ok)

            // Apple's record drifts; the guard's repair reaches Apple, which holds it unapplied.
            #expect(gateway.dropRegisteredDomain(domain, partner: partner))
            gateway.holdRegistrations()
            let repair = Task { await rig.pass(after: Self.interval) }
            #expect(try await Eventually.until { gateway.heldRegistrationCount == 1 })

            let leaving = Task {
                try await rig.server.send(
                    "POST", "/admin/merchants/\(partner)/unregister",
                    body: Array(#"{"domainNames": ["\#(domain)"], "reason": "left"}"#.utf8), extraHeaders: MoreMerchants.authorization)
            }
            // Either the delete reaches Apple while the repair is still held (the race this
            // forbids), or the unregistration says it waits for the call under way.
            let waits = { logs.records.withLock { $0.contains { $0.message.contains("the unregistration waits") } } }
            #expect(try await Eventually.until { Self.appleCalls(gateway, partner: partner).contains("unregister") || waits() })
            gateway.releaseRegistrations()
            await repair.value
            let gone = try await leaving.value
            #expect(gone.status == 200, "\(gone.errorMessage ?? "")")

            let calls = Self.appleCalls(gateway, partner: partner)
            let delete = try #require(calls.firstIndex(of: "unregister"), "\(calls)")
            #expect(!calls[delete...].contains("register"), "Apple heard a register after the unregistration: \(calls)")
            #expect(calls.filter { $0 == "register" }.count == 2, "the registration and the guard's repair: \(calls)")
            #expect(gateway.partnerMerchants[partner]?.domainNames.isEmpty ?? true, "Apple still holds \(partner)")
            #expect(try await rig.server.store.registeredMerchants().isEmpty)
        }
    }
}
