import ApplePay
import Foundation
import OrchardCore
import OrchardTesting
import Testing

/// The registry's two guarantees to several instances: one registered merchant per partner ID
/// in any letter case, kept by the store itself (two instances registering `ACME` and `acme` at
/// once both pass the check made in code), and a registration claimed by one holder at a time
/// for calls to Apple.
@Suite("Registry contract: IDs unique in any letter case, one claim at a time: SQLite, in memory and PostgreSQL")
struct RegistryClaimContractTests {
    typealias Kind = StoreContractTests.Kind

    static func merchant(_ id: String, domain: String) -> RegisteredMerchant {
        RegisteredMerchant(
            partnerIdentifier: id, name: "Acme", encryptTo: "merchant.platform", merchantUrl: nil, domains: [domain],
            createdAt: StoreContractTests.now, updatedAt: StoreContractTests.now)
    }

    @Test(
        "ACME and acme saved at the same moment: exactly one is registered, the other refused as identifier_taken", arguments: Kind.enabled)
    func caseVariantsAtOnce(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            try await StoreConcurrencyContractTests.warm(store)
            let outcomes = try await StoreConcurrencyContractTests.concurrently(2) { index in
                await StoreContractTests.storeError {
                    try await store.saveRegistration(Self.merchant(index == 0 ? "ACME" : "acme", domain: "shop\(index).example"))
                }
            }
            #expect(outcomes.filter { $0 == nil }.count == 1 && outcomes.contains(.identifierTaken), "\(outcomes)")
            #expect(try await store.registeredMerchants().count == 1)
            // Saved again under its own ID in the same letter case, the winner is an update, not a variant.
            let winner = try #require(try await store.registeredMerchants().first)
            try await store.saveRegistration(Self.merchant(winner.partnerIdentifier, domain: "again.example"))
            #expect(try await store.registeredMerchants().map(\.domains) == [["again.example"]])
        }
    }

    @Test(
        "a registration is claimed by one holder at a time: renewed by it, taken over once expired, released, gone with it",
        arguments: Kind.enabled)
    func claims(kind: Kind) async throws {
        try await StoreContractTests.withStore(kind) { store in
            let now = StoreContractTests.now
            let later = now.addingTimeInterval(300)
            func claim(_ holder: String, at date: Date) async throws -> RegistrationClaim {
                try await store.claimRegistration(partnerIdentifier: "acme", holder: holder, until: date.addingTimeInterval(300), at: date)
            }
            #expect(try await claim("guard", at: now) == .absent, "nothing to claim before it is registered")
            try await store.saveRegistration(Self.merchant("acme", domain: "shop.example"))
            #expect(try await claim("guard", at: now) == .claimed)
            #expect(try await claim("unregister", at: now) == .held)
            #expect(try await claim("guard", at: now.addingTimeInterval(10)) == .claimed, "its holder renews it")
            // Saving the registration (an unregistration's first step) leaves the claim as it is.
            try await store.saveRegistration(Self.merchant("acme", domain: "other.example"))
            #expect(try await claim("unregister", at: later) == .held, "renewed until 310 s after the start")
            #expect(try await claim("unregister", at: later.addingTimeInterval(10)) == .claimed, "an expired claim is taken over")
            try await store.releaseRegistration(partnerIdentifier: "acme", holder: "guard")
            #expect(try await claim("guard", at: later.addingTimeInterval(10)) == .held, "another's release gives up nothing")
            try await store.releaseRegistration(partnerIdentifier: "acme", holder: "unregister")
            #expect(try await claim("guard", at: later.addingTimeInterval(10)) == .claimed)
            try await store.deleteRegistration(partnerIdentifier: "acme", at: later)
            try await store.saveRegistration(Self.merchant("acme", domain: "shop.example"))
            #expect(try await claim("unregister", at: later.addingTimeInterval(10)) == .claimed, "a retirement takes its claim with it")
        }
    }
}
