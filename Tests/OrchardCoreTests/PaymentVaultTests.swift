import ApplePay
import Crypto
import Foundation
import Testing

@testable import OrchardCore

/// Sealed retry requests open only for the payment they were sealed for.
@Suite("Payment vault: retry requests bound to their payment")
struct PaymentVaultTests {
    @Test("a request sealed for one payment does not open for another; one sealed before binding still opens")
    func bound() throws {
        let vault = PaymentVault.ephemeral()
        let request = RetryRequest(token: nil, cardholderName: "A Shopper", mandateId: "mdt_1")
        let sealed = try vault.seal(request, for: "pay_1")
        #expect(sealed.first == PaymentVault.boundFormat)
        #expect(try vault.unseal(sealed, for: "pay_1").mandateId == "mdt_1")
        // Moved to another payment's row, by whoever can write the database: it does not open.
        #expect(throws: (any Error).self) { try vault.unseal(sealed, for: "pay_2") }
        // Nor as a legacy request, nor with its format byte taken off.
        #expect(throws: (any Error).self) { try vault.unseal(Array(sealed.dropFirst()), for: "pay_2") }
        #expect(throws: (any Error).self) { try PaymentVault.ephemeral().unseal(sealed, for: "pay_1") }

        // Sealed by an earlier Orchard (no format byte, nothing bound): still opens, so a payment
        // left unknown across the upgrade can be re-sent.
        let legacy = Array(try AES.GCM.seal(try JSONEncoder().encode(request), using: vault.key).combined!)
        #expect(try vault.unseal(legacy, for: "pay_9").cardholderName == "A Shopper")
    }
}
