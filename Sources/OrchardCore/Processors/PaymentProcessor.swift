import ApplePay
import Foundation
import GooglePay
import Synchronization

/// What a processor is handed: the verified payment for an order, as the shopper's wallet gave it.
public struct AuthorizationRequest: Sendable {
    public var order: OrderRecord
    /// The token, and what Orchard decrypted of it where it holds the key.
    public var wallet: WalletCredential
    /// The idempotency reference of this attempt: the same after an unknown outcome, so a retry
    /// can never charge twice.
    public var reference: String
    /// The billing contact's name, when the page sent one.
    public var cardholderName: String?
    /// Set when the payment sets up a mandate (a recurring, deferred or automatic-reload
    /// agreement): the processor is asked to store the credential for later merchant-initiated
    /// charges used this way, and answers with ``AuthorizationOutcome/storedCredential``.
    public var storeCredential: CredentialUsage?

    /// An Apple Pay payment: `payment` is what Orchard decrypted; nil when the processor holds the
    /// processing key and decrypts the token itself (Orchard never sees the card data).
    public init(
        order: OrderRecord, token: PaymentToken, payment: DecryptedPayment?, reference: String, cardholderName: String? = nil,
        storeCredential: CredentialUsage? = nil
    ) {
        self.init(
            order: order, wallet: .applePay(token, decrypted: payment), reference: reference, cardholderName: cardholderName,
            storeCredential: storeCredential)
    }

    public init(
        order: OrderRecord, wallet: WalletCredential, reference: String, cardholderName: String? = nil,
        storeCredential: CredentialUsage? = nil
    ) {
        self.order = order
        self.wallet = wallet
        self.reference = reference
        self.cardholderName = cardholderName
        self.storeCredential = storeCredential
    }
}

/// The wallet's token as the processor is handed it.
public enum WalletCredential: Sendable {
    /// Apple Pay's token, and what Orchard decrypted of it (nil when the processor holds the key).
    case applePay(PaymentToken, decrypted: DecryptedPayment?)
    /// Google Pay's token exactly as Google gave it, and in direct mode what Orchard decrypted of
    /// it (nil in gateway mode, where the processor decrypts it).
    case googlePay(GooglePayPaymentMethod, decrypted: GooglePayPaymentData?)
}

/// A merchant-initiated charge of a mandate: the shopper is not present, the processor charges
/// the credential it stored at the mandate's first payment.
public struct MandateChargeRequest: Sendable {
    public var mandate: MandateRecord
    /// The charge's own order (its amount and currency).
    public var order: OrderRecord
    /// The idempotency reference of this attempt: the same after an unknown outcome.
    public var reference: String
    /// How often this reference was sent, this send included.
    public var sends: Int

    public init(mandate: MandateRecord, order: OrderRecord, reference: String, sends: Int = 1) {
        self.mandate = mandate
        self.order = order
        self.reference = reference
        self.sends = sends
    }
}

/// What a processor answered.
public struct AuthorizationOutcome: Sendable, Equatable {
    public enum Status: String, Sendable {
        case authorized
        /// Declined by the issuer or the processor's risk checks: nothing was charged.
        case refused
        /// The processor refused the request itself (credentials, validation) in a way that proves
        /// nothing was charged by this request. Only a reference's first send makes that final.
        case failed
        /// The processor took the payment but has no outcome yet (a redirect, an authorization
        /// requested, a payment waiting for its customer): it holds no funds. The payment stays
        /// unknown, keeps the processor's reference, and is settled by asking the processor
        /// (``PaymentProcessor/lookup(_:)``), never by sending it again.
        case pending
    }

    public var status: Status
    /// The processor's own ID for the payment.
    public var processorReference: String?
    /// The processor's refusal or error code and description (for the back office, not the shopper).
    public var code: String?
    public var message: String?
    /// Follow-up actions (`settle`, `cancel`) and their URLs.
    public var links: [String: String]
    /// What the processor stored when asked to (``AuthorizationRequest/storeCredential``); nil
    /// when it was not asked, or did not store it (the mandate is then not created).
    public var storedCredential: StoredCredential?

    public init(
        status: Status, processorReference: String? = nil, code: String? = nil, message: String? = nil, links: [String: String] = [:],
        storedCredential: StoredCredential? = nil
    ) {
        self.status = status
        self.processorReference = processorReference
        self.code = code
        self.message = message
        self.links = links
        self.storedCredential = storedCredential
    }
}

extension AuthorizationOutcome {
    /// This outcome, unless it is a `.failed` refusal of a reference sent before: the processor
    /// may be refusing a duplicate of its own earlier send, so that is no answer, not proof that
    /// nothing was charged.
    public func definite(sends: Int, processor: String, reference: String, status: Int) throws -> AuthorizationOutcome {
        guard self.status == .failed && sends > 1 else { return self }
        throw ProcessorNoAnswer(
            "\(processor) refused a re-send of \(reference) (\(code ?? "HTTP \(status)")): not proof that nothing was charged")
    }
}

/// The processor gave no definite answer (5xx, 409 in progress, timeout, dropped connection, an
/// unreadable body): it may or may not have charged.
public struct ProcessorNoAnswer: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// A settle or cancel the processor did not accept, or did not answer.
public struct ProcessorActionError: Error, Sendable, CustomStringConvertible {
    public var description: String
    /// False when the processor gave no definite answer (no connection, a timeout, 5xx, 409 in
    /// progress, 429): the action may have been made, so nothing may conclude it was refused.
    public var definite: Bool
    public init(_ description: String, definite: Bool = true) {
        self.description = description
        self.definite = definite
    }

    /// Whether an HTTP status answering an action is a definite refusal: any 4xx but 409 (the
    /// resource is busy: the action may be under way) and 429 (not looked at).
    public static func isDefinite(status: Int) -> Bool {
        (400..<500).contains(status) && status != 409 && status != 429
    }
}

/// Hands payments to a payment service provider, and settles or cancels them later.
public protocol PaymentProcessor: Sendable {
    /// `record`, `worldpay` or `worldline`.
    var name: String { get }
    /// Throws (``ProcessorNoAnswer`` or any error) when the outcome is not definite; the engine
    /// then keeps the payment unknown and re-sends the same reference later.
    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome
    /// Settles (captures) an authorized payment. Returns the follow-up actions the processor's
    /// answer offers (`refund`, `partialRefund`) and their URLs, which the engine adds to the
    /// payment's links: Worldpay hands out its refund links only here.
    func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String]
    /// Captures `amount` (1 to the authorized amount) of an authorized payment and releases the
    /// rest of the authorization where the processor can; the whole amount is ``settle(_:)``.
    /// By default a processor takes no partial capture and refuses one, sending nothing.
    func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String]
    func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError)
    /// Refunds part or all of a settled payment under the refund's own reference. Throws (any
    /// error) when the outcome is not definite: the refund is then unknown and a retry re-sends
    /// the same reference.
    func refund(_ request: RefundRequest) async throws -> RefundOutcome
    /// Charges a mandate's stored credential, merchant-initiated. Throws (any error) when the
    /// outcome is not definite, exactly as ``authorize(_:)``.
    func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome
    /// Deletes the stored credential at the processor when its mandate ends.
    func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError)
    /// Tells the processor the card behind a mandate's stored credential (its MPAN) has a new
    /// expiry, where its API keeps one for a stored credential. False, sending nothing, when this
    /// processor has no such call (the default).
    func updateCredentialExpiry(_ mandate: MandateRecord, month: Int, year: Int) async throws(ProcessorActionError) -> Bool
    /// What the processor's records say of an unknown payment's or charge's reference (its
    /// ``PaymentRecord/processorReference`` when it has one). A `found` outcome is `authorized`
    /// or `refused`. Throws when the processor could not be asked; nothing is then re-sent.
    func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup
    /// What the processor's records say of an unknown refund of `payment`, as ``lookup(_:)``.
    func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup
}

extension PaymentProcessor {
    /// The whole amount is an ordinary settle; a processor without partial captures refuses part of it.
    public func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String] {
        guard amount == payment.amount else { throw ProcessorActionError("\(name) takes no partial capture through Orchard") }
        return try await settle(payment)
    }

    /// No call for a stored credential's new expiry: nothing is sent.
    public func updateCredentialExpiry(_ mandate: MandateRecord, month: Int, year: Int) async throws(ProcessorActionError) -> Bool {
        false
    }
}

/// A refund of a settled payment, as the processor is handed it.
public struct RefundRequest: Sendable {
    public var payment: PaymentRecord
    /// Minor units of the payment's currency; at most what is not refunded yet.
    public var amount: Int64
    /// The refund's idempotency reference (`<payment reference>-r<n>`): the same on every re-send.
    public var reference: String
    /// How often this reference was sent, this send included: a refusal proves nothing after the first.
    public var sends: Int

    /// Whether this refund returns the whole payment (processors have a cheaper call for that).
    public var isFull: Bool { amount == payment.captured }

    public init(payment: PaymentRecord, amount: Int64, reference: String, sends: Int = 1) {
        self.payment = payment
        self.amount = amount
        self.reference = reference
        self.sends = sends
    }
}

/// What a processor answered to a refund.
public struct RefundOutcome: Sendable, Equatable {
    public enum Status: String, Sendable {
        /// The processor accepted the refund (it may pay out later, as processors do).
        case refunded
        /// The processor refused it definitely: nothing was refunded.
        case refused
    }

    public var status: Status
    /// The processor's own ID for the refund.
    public var processorReference: String?
    public var code: String?
    public var message: String?

    public init(status: Status, processorReference: String? = nil, code: String? = nil, message: String? = nil) {
        self.status = status
        self.processorReference = processorReference
        self.code = code
        self.message = message
    }
}

/// Records the authorization for a back office to process: Orchard's default.
public struct RecordOnlyProcessor: PaymentProcessor {
    public init() {}

    public var name: String { "record" }

    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        AuthorizationOutcome(
            status: .authorized, processorReference: "recorded:\(request.reference)",
            storedCredential: request.storeCredential.map { _ in StoredCredential(reference: "recorded:\(request.reference)") })
    }

    /// Recorded for the back office, which charges the mandate with its own processor.
    public func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        AuthorizationOutcome(status: .authorized, processorReference: "recorded:\(request.reference)")
    }

    public func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {}

    /// Nothing to call: the back office settles with its own processor; Orchard records the state.
    public func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] { [:] }
    /// Part of the amount is recorded as captured the same way.
    public func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String] { [:] }
    public func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {}
    public func refund(_ request: RefundRequest) async throws -> RefundOutcome {
        RefundOutcome(status: .refunded, processorReference: "recorded:\(request.reference)")
    }

    /// Recording answers the same whatever the re-sends: a re-send is always safe.
    public func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup { .deduplicated(window: nil) }
    public func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup {
        .deduplicated(window: nil)
    }
}

/// Makes the processor client for checked settings: the runtime hands the server one, so
/// merchants registered while it runs get their processor without a restart.
public protocol ProcessorMaker: Sendable {
    func processor(for settings: any ProcessorSettings) -> any PaymentProcessor
}

/// The processor of each merchant: the configured ones, fixed at startup, and the registered
/// ones, replaced when an operator changes their settings.
public final class PaymentProcessors: Sendable {
    let byMerchant: [String: any PaymentProcessor]
    let fallback: any PaymentProcessor
    private let registered = Mutex<[String: any PaymentProcessor]>([:])

    /// `fallback` serves every merchant without its own entry.
    public init(byMerchant: [String: any PaymentProcessor] = [:], fallback: any PaymentProcessor = RecordOnlyProcessor()) {
        self.byMerchant = byMerchant
        self.fallback = fallback
    }

    public static var recordOnly: PaymentProcessors { PaymentProcessors() }

    public func processor(forMerchant merchantIdentifier: String) -> any PaymentProcessor {
        byMerchant[merchantIdentifier] ?? registered.withLock { $0[merchantIdentifier] } ?? fallback
    }

    /// Sets (nil: removes) a registered merchant's processor; configured merchants keep theirs.
    public func setRegistered(_ processor: (any PaymentProcessor)?, forMerchant merchantIdentifier: String) {
        registered.withLock { $0[merchantIdentifier] = processor }
    }
}
