import ApplePay
import OrchardCore
import Testing

/// The agreement the shopper accepted bounds every merchant-initiated charge (in memory).
@Suite("Mandate charges are bounded by their agreement")
struct MandateChargeBoundTests {
    static func agreement(_ kind: PaymentAgreement.Kind) -> PaymentAgreement {
        let line = PaymentAgreement.Billing(label: "Line", amount: 1000)
        return PaymentAgreement(
            type: kind, paymentDescription: "Tea", managementURL: "https://shop.example/account",
            regularBilling: kind == .recurring ? line : nil, deferredBilling: kind == .deferred ? line : nil,
            automaticReloadBilling: kind == .automaticReload ? line : nil)
    }

    /// A refusal is Core's one error, as the API's 400 (invalidRequest).
    static func refused(_ check: () throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) {
        let error = #expect(throws: CoreError.self, sourceLocation: sourceLocation) { try check() }
        #expect(error?.code == .invalidRequest, sourceLocation: sourceLocation)
    }

    @Test("up to the agreement's amount; above it only with a reason, and never for a reload", arguments: PaymentAgreement.Kind.allCases)
    func bounds(kind: PaymentAgreement.Kind) {
        let agreement = Self.agreement(kind)
        for amount: Int64 in [1, 999, 1000] {
            #expect(throws: Never.self) { try MandateChargeBound.check(amount: amount, agreement: agreement, reasonAbove: nil) }
        }
        for amount: Int64 in [1001, .max] {
            Self.refused { try MandateChargeBound.check(amount: amount, agreement: agreement, reasonAbove: nil) }
        }
        let reason = "price change notified on 1 March"
        if kind == .automaticReload {
            Self.refused { try MandateChargeBound.check(amount: 1001, agreement: agreement, reasonAbove: reason) }
        } else {
            #expect(throws: Never.self) { try MandateChargeBound.check(amount: 1001, agreement: agreement, reasonAbove: reason) }
            for bad in ["", "   ", String(repeating: "x", count: 201)] {
                Self.refused { try MandateChargeBound.check(amount: 1001, agreement: agreement, reasonAbove: bad) }
            }
        }
    }

    @Test("an agreement without its billing line is never charged")
    func missingLine() {
        var agreement = Self.agreement(.recurring)
        agreement.regularBilling = nil
        Self.refused { try MandateChargeBound.check(amount: 1, agreement: agreement, reasonAbove: nil) }
    }
}
