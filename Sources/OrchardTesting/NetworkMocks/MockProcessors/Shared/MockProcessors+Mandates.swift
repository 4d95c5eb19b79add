import Foundation
import Synchronization

/// A credential a mock processor stored for later merchant-initiated charges: issued only by a
/// first payment that asked for it (Worldline's `tokenize`, Worldpay's `tokenCreation`) and was authorized.
public struct MockStoredToken: Sendable, Equatable {
    public var processor: String
    /// What the processor client keeps: Worldline's token ID, Worldpay's token href.
    public var reference: String
    /// `scheduled` (Worldline's `isRecurring`, Worldpay's `subscription`) or `unscheduled`.
    public var usage: String
    /// The first payment's reference.
    public var paymentReference: String
    /// The scheme's reference handed out with the token (Worldpay); nil for Worldline.
    public var schemeReference: String?
    public var deleted: Bool
    /// The card expiry last given for the token (Worldpay's `PUT` on `tokens:cardExpiryDate`); nil until one was.
    public var cardExpiryDate: MockCardExpiry? = nil
}

/// A stored card's expiry, as Worldpay's Tokens API takes it.
public struct MockCardExpiry: Sendable, Equatable {
    public var month: Int
    public var year: Int

    public init(month: Int, year: Int) {
        self.month = month
        self.year = year
    }
}

/// A merchant-initiated charge the mock took (authorized or refused): one per reference, whatever the re-sends.
public struct MockMandateCharge: Sendable, Equatable {
    public var processor: String
    public var reference: String
    /// The payment's ID (Worldline's payment ID, Worldpay's link key), as in ``MockProcessors/charges``.
    public var id: String
    /// The token charged, as sent (Worldline's token ID, Worldpay's href).
    public var token: String
    /// `scheduled` or `unscheduled`, as the request said (Worldline's `isRecurring` or card-on-file
    /// indicators, Worldpay's `customerAgreement.type`).
    public var usage: String
    public var amount: Int64
    public var currency: String
    /// Worldpay's `customerAgreement.schemeReference`, when sent.
    public var schemeReference: String?
    public var state: MockCharge.State
}

/// Stored credentials, for every processor mock: tokens issued by first payments, merchant-initiated
/// charges of them (idempotent like every payment: a reference's first answer is replayed, and it
/// is counted once; an unknown or deleted token is refused), and token deletion (404 once gone).
extension MockProcessors {
    /// Every token issued, oldest first; deleted ones are marked.
    public var storedTokens: [MockStoredToken] { state.withLock { $0.tokens } }

    /// Every merchant-initiated charge taken, oldest first.
    public var mitCharges: [MockMandateCharge] { state.withLock { $0.mandateCharges } }

    /// The references of the tokens deleted, in the order they were.
    public var deletedTokens: [String] { state.withLock { $0.deletedTokens } }

    /// When true, first payments that ask for a token are authorized without one (Worldline:
    /// `tokenizationSucceeded: false`; Worldpay: no `tokenPaymentInstrument`).
    public var withholdsTokens: Bool {
        get { state.withLock { $0.withholdsTokens } }
        set { state.withLock { $0.withholdsTokens = newValue } }
    }

    /// Why the token with this reference cannot be charged (unknown, or deleted); nil when it can.
    func tokenRefusal(_ processor: String, _ reference: String) -> (code: String, description: String)? {
        let token = state.withLock { state in state.tokens.last { $0.processor == processor && $0.reference == reference } }
        guard let token else { return ("UNKNOWN_TOKEN", "no such stored credential") }
        return token.deleted ? ("TOKEN_DELETED", "the stored credential was deleted") : nil
    }

    /// The live (not deleted) token with this reference.
    func liveToken(_ processor: String, _ reference: String) -> MockStoredToken? {
        state.withLock { state in state.tokens.last { $0.processor == processor && $0.reference == reference && !$0.deleted } }
    }

    /// Sets a live token's card expiry; false when there is no such token.
    func setCardExpiry(_ processor: String, _ reference: String, _ expiry: MockCardExpiry) -> Bool {
        state.withLock { state in
            guard let index = state.tokens.lastIndex(where: { $0.processor == processor && $0.reference == reference && !$0.deleted })
            else { return false }
            state.tokens[index].cardExpiryDate = expiry
            return true
        }
    }

    /// Marks a live token deleted; false when there is none (unknown, or deleted before).
    func deleteToken(_ processor: String, _ reference: String) -> Bool {
        state.withLock { state in
            guard let index = state.tokens.lastIndex(where: { $0.processor == processor && $0.reference == reference && !$0.deleted })
            else { return false }
            state.tokens[index].deleted = true
            state.deletedTokens.append(reference)
            return true
        }
    }
}
