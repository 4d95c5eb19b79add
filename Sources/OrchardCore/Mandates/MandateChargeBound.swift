import ApplePay

/// How much a merchant-initiated charge of a mandate may be, from the agreement the shopper
/// accepted on the sheet: the shopper saw a billing amount, and a charge above it is one they
/// did not agree to.
public enum MandateChargeBound {
    /// The longest reason a shop may give for charging above a recurring or deferred amount.
    public static let maximumReasonLength = 200

    /// Checks `amount` against `agreement`:
    /// - recurring: at most the regular billing amount (a trial's amount is lower);
    /// - deferred: at most the deferred billing amount;
    /// - automatic reload: at most the reload amount, whatever the shop says.
    ///
    /// A recurring or deferred charge may go above its amount only when the shop says why
    /// (`reasonAbove`, 1–200 characters: a price change it notified, say); a reload never.
    /// A refusal is ``CoreError/Code/invalidRequest`` and names the agreement's amount.
    public static func check(amount: Int64, agreement: PaymentAgreement, reasonAbove: String?) throws(CoreError) {
        let (limit, name): (Int64?, String) =
            switch agreement.type {
            case .recurring: (agreement.regularBilling?.amount, "the recurring agreement's regularBilling.amount")
            case .deferred: (agreement.deferredBilling?.amount, "the deferred agreement's deferredBilling.amount")
            case .automaticReload: (agreement.automaticReloadBilling?.amount, "the reload agreement's automaticReloadBilling.amount")
            }
        if let reasonAbove {
            guard agreement.type != .automaticReload else {
                throw CoreError(
                    .invalidRequest, "allowAmountAbove does not apply to an automatic reload: a reload charges its reload amount at most")
            }
            guard (1...maximumReasonLength).contains(reasonAbove.count), !reasonAbove.allSatisfy(\.isWhitespace) else {
                throw CoreError(
                    .invalidRequest,
                    "allowAmountAbove.reason must be 1–\(maximumReasonLength) characters saying why the shopper is charged more")
            }
            return
        }
        // An agreement without its billing line cannot have been accepted; refuse rather than guess.
        guard let limit else { throw CoreError(.invalidRequest, "the mandate's agreement has no billing amount: it cannot be charged") }
        guard amount <= limit else {
            throw CoreError(
                .invalidRequest,
                "amount \(amount) is above \(name) (\(limit)) the shopper agreed to; pass allowAmountAbove with a reason if the shopper was told"
            )
        }
    }
}
