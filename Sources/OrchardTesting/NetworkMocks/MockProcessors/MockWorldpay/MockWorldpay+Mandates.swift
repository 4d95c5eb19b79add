import Foundation
import Synchronization

/// Worldpay Access mandates: the first payment's `customerAgreement` and
/// `tokenCreation`, merchant-initiated charges of the token, and token deletion.
///
/// The answer's `tokenPaymentInstrument` (`card/tokenized`, the token's href) on an Apple Pay
/// wallet payment is this mock's contract: Worldpay's guides do not show whether a wallet payment
/// gets a token. What the guides do show is checked strictly: `channel` is not allowed on a
/// merchant-initiated charge, and a `schemeReference` is 1–56 letters and digits.
extension MockWorldpay {
    static let worldpayAgreementTypes: Set = ["cardOnFile", "subscription", "installment", "unscheduled"]

    /// Checks a first payment's `customerAgreement` and `tokenCreation`. Returns the usage of the
    /// token to issue (nil: no token asked) and what is wrong.
    func worldpayFirstAgreement(_ instruction: [String: Any]) -> (usage: String?, problems: [String]) {
        var problems: [String] = []
        var type: String?
        if let agreement = instruction["customerAgreement"] {
            let fields = agreement as? [String: Any] ?? [:]
            type = fields["type"] as? String
            if !Self.worldpayAgreementTypes.contains(type ?? "") {
                problems.append("instruction.customerAgreement.type: cardOnFile, subscription, installment or unscheduled")
            }
            let usage = fields["storedCardUsage"] as? String
            if !["first", "subsequent"].contains(usage ?? "") {
                problems.append("instruction.customerAgreement.storedCardUsage: first or subsequent")
            }
            if fields["schemeReference"] != nil && usage != "subsequent" {
                problems.append("instruction.customerAgreement.schemeReference: only with storedCardUsage subsequent")
            }
        }
        guard let creation = instruction["tokenCreation"] else { return (nil, problems) }
        if (creation as? [String: Any])?["type"] as? String != "worldpay" {
            problems.append("instruction.tokenCreation.type: worldpay")
        }
        return (type == "subscription" ? "scheduled" : "unscheduled", problems)
    }

    /// Checks a merchant-initiated charge's instruction: a `card/token` instrument with an href,
    /// a `customerAgreement` with a type (no `storedCardUsage` but `subsequent`), an optional
    /// well-formed `schemeReference`, and nothing a first payment alone may send.
    static func worldpayMandateProblems(_ instruction: [String: Any]) -> [(name: String, message: String)] {
        var problems: [(name: String, message: String)] = []
        let instrument = instruction["paymentInstrument"] as? [String: Any] ?? [:]
        if instrument["type"] as? String != "card/token" || (instrument["href"] as? String ?? "").isEmpty {
            problems.append(("fieldIsInvalid", "instruction.paymentInstrument: card/token with the token's href"))
        }
        if instrument["walletToken"] != nil { problems.append(("fieldIsNotAllowed", "$.instruction.paymentInstrument.walletToken")) }
        if instruction["tokenCreation"] != nil { problems.append(("fieldIsNotAllowed", "$.instruction.tokenCreation")) }
        let agreement = instruction["customerAgreement"] as? [String: Any] ?? [:]
        if !worldpayAgreementTypes.contains(agreement["type"] as? String ?? "") {
            problems.append(("fieldIsInvalid", "instruction.customerAgreement.type: required on a merchant-initiated charge"))
        }
        if let usage = agreement["storedCardUsage"], usage as? String != "subsequent" {
            problems.append(("fieldIsInvalid", "instruction.customerAgreement.storedCardUsage: subsequent"))
        }
        if let scheme = agreement["schemeReference"] {
            let text = scheme as? String ?? ""
            if !(1...56).contains(text.utf8.count) || !text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) {
                problems.append(("fieldIsInvalid", "instruction.customerAgreement.schemeReference: 1–56 letters and digits"))
            }
        }
        return problems
    }

    /// `POST /cardPayments/merchantInitiatedTransactions`: checked as a payment, then for what
    /// this route allows; an unknown or deleted token is refused (`outcome: refused`).
    func worldpayMandateCharge(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        var mandateProblems: [(name: String, message: String)] = []
        let checking = worldpayPaymentRequest(request) { instruction in
            mandateProblems = Self.worldpayMandateProblems(instruction)
            return []
        }
        let checked: WorldpayPaymentRequest
        switch checking {
        case .accepted(let request): checked = request
        case .refused(let reply): return reply
        }
        // Worldpay: channel is for customer-initiated payments only.
        if checked.body["channel"] != nil { mandateProblems.insert(("fieldIsNotAllowed", "$.channel"), at: 0) }
        guard mandateProblems.isEmpty else { return Self.worldpaySchemaError(mandateProblems) }
        let href = (checked.instruction["paymentInstrument"] as? [String: Any])?["href"] as? String ?? ""
        let agreement = checked.instruction["customerAgreement"] as? [String: Any] ?? [:]
        let usage = agreement["type"] as? String == "subscription" ? "scheduled" : "unscheduled"
        let refusal = mock.tokenRefusal(name, href)
        return worldpayPayment(
            checked, mode: "token", extra: ["scheme": ["reference": agreement["schemeReference"] as? String ?? "060720116005060"]],
            declined: refusal.map { (code: $0.code == "TOKEN_DELETED" ? "tokenDeleted" : "tokenNotFound", description: $0.description) },
            mock: mock
        ) { state, taken in
            state.mandateCharges.append(
                MockMandateCharge(
                    processor: name, reference: checked.reference, id: taken.id, token: href, usage: usage, amount: checked.amount,
                    currency: checked.currency, schemeReference: agreement["schemeReference"] as? String, state: taken.state))
        }
    }

    /// `DELETE` on a token's href (Tokens API v3, which its `Accept` header names): 204, or 404
    /// for a token unknown or gone.
    func worldpayDeleteToken(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply {
        if let denied = worldpayAuthorized(request) { return denied }
        let mediaType = "application/vnd.worldpay.tokens-v3.hal+json"
        guard request.header("Accept") == mediaType else {
            return worldpayError(406, "headerHasInvalidValue", "Accept must be \(mediaType)")
        }
        guard mock.deleteToken(name, mock.baseURL + request.path) else {
            return worldpayError(404, "tokenNotFound", "no such token")
        }
        return .answer(status: 204, body: [], headers: [])
    }
}
