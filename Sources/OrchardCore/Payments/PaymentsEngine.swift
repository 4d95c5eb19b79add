import ApplePay
import Crypto
import Foundation
import GooglePay
import Logging
import Metrics

/// The money path, outside HTTP: verifies and decrypts a token, binds it to its order, claims
/// the order, sends the payment to the merchant's processor under an idempotency reference and
/// records the answer, moving payments and orders only along ``PaymentLifecycle``.
///
/// The rules it keeps: while an attempt of an order is `pending` or `unknown` no new reference
/// is issued (a retry re-sends the unknown one, or is told to wait); only a definite answer for
/// that reference, or an operator, ends `unknown`; a rejection proves nothing was charged only
/// on a reference's first send; a store failure after the processor answered is `unknown` to the
/// shopper, and the reconciler settles it from the processor's replayed answer.
public struct PaymentsEngine: Sendable {
    /// How stale payments are detected and unknown ones re-sent.
    public struct Policy: Sendable {
        /// A payment pending for longer than this has no call in flight (longer than any processor timeout).
        public var staleAfter: TimeInterval
        /// Background re-sends of one unknown payment before it is left to an operator.
        public var maximumReconcileAttempts: Int
        /// The wait before the first re-send; it doubles after each, up to `maximumReconcileDelay`.
        public var firstReconcileDelay: TimeInterval
        public var maximumReconcileDelay: TimeInterval
        /// How long a reconciliation pass holds the payment or refund it took, until its re-send's
        /// compare-and-set (other instances pass it by meanwhile): after a crash, the longest it waits.
        public var lease: TimeInterval
        /// How long a settle or cancel holds its payment: longer than any processor call can last
        /// (its timeout is at most 24 s), so after a crash the payment can be acted on again.
        public var operationLease: TimeInterval = 60
        /// How often the reconciler looks for stale and unknown payments to re-send.
        public var reconcileInterval: Duration

        public init(
            staleAfter: TimeInterval = 30, maximumReconcileAttempts: Int = 8, firstReconcileDelay: TimeInterval = 30,
            maximumReconcileDelay: TimeInterval = 3600, lease: TimeInterval = 15, reconcileInterval: Duration = .seconds(30)
        ) {
            self.reconcileInterval = reconcileInterval
            self.staleAfter = staleAfter
            self.maximumReconcileAttempts = maximumReconcileAttempts
            self.firstReconcileDelay = firstReconcileDelay
            self.maximumReconcileDelay = maximumReconcileDelay
            self.lease = lease
        }

        /// When an unknown payment that was re-sent `attempts` times is next due; nil when it needs an operator.
        func nextReconcile(after attempts: Int, now: Date) -> Date? {
            guard attempts < maximumReconcileAttempts else { return nil }
            let delay = min(firstReconcileDelay * pow(2, Double(min(attempts, 30))), maximumReconcileDelay)
            return now.addingTimeInterval(delay)
        }
    }

    /// A shopper's authorization: the token the page or app posted for an order of the merchant.
    public struct Attempt: Sendable {
        /// The token the shopper's wallet gave.
        public enum Wallet: Sendable {
            /// Apple Pay's token: bound to the order by its `applicationData`.
            case applePay(PaymentToken)
            /// Google Pay's payment method: Google's token carries nothing of the order, so the
            /// page sends the price version its sheet showed, and the order is charged at the
            /// server's total for that version.
            case googlePay(GooglePayPaymentMethod, priceVersion: Int?)
        }

        public var merchantIdentifier: String
        public var orderId: String
        public var wallet: Wallet
        public var cardholderName: String?

        public init(merchantIdentifier: String, orderId: String, token: PaymentToken, cardholderName: String? = nil) {
            self.init(merchantIdentifier: merchantIdentifier, orderId: orderId, wallet: .applePay(token), cardholderName: cardholderName)
        }

        public init(merchantIdentifier: String, orderId: String, wallet: Wallet, cardholderName: String? = nil) {
            self.merchantIdentifier = merchantIdentifier
            self.orderId = orderId
            self.wallet = wallet
            self.cardholderName = cardholderName
        }
    }

    /// Orders and their payments.
    let orderPayments: any OrderPayments
    /// The payments' refunds.
    let refunds: any Refunds
    /// The mandates a merchant-initiated charge reads.
    let mandates: any MandateRecords
    let processors: PaymentProcessors
    /// Checks tokens against Apple's root (or the demo's test root); the mandate lifecycle checks
    /// token events' metadata with its root and chains.
    public let verifier: TokenVerifier
    let decryptors: [String: TokenDecryptor]
    /// Each merchant's Google Pay settings, by merchant identifier; a merchant without them takes no Google Pay.
    let googlePay: [String: GooglePaySettings]
    /// The platform integrator's keys, for merchants it registered.
    let platformDecryptor: TokenDecryptor?
    let vault: PaymentVault
    let time: TimeSource
    public let policy: Policy
    let logger: Logger
    /// Told the payment's ID after a capture, a cancellation or a refund took effect (Wallet
    /// orders follow the payment); set once by the composition root, before the engine is shared.
    public var onPaymentChanged: (@Sendable (String) async -> Void)?
    /// Told the payment's ID when an authorization recorded an automatic capture as due, so the
    /// capture loop tries it at once (``captureDue(limit:)``) rather than at its next pass; must
    /// return at once (the shopper's request is waiting). Set once by the composition root.
    public var onCaptureDue: (@Sendable (String) -> Void)?

    /// - Parameters:
    ///   - orderPayments: orders and their payments.
    ///   - refunds: the payments' refunds.
    ///   - mandates: the mandates a charge reads.
    ///   - verifier: checks tokens against Apple's root (or the demo's test root).
    ///   - decryptors: each merchant's processing keys, by merchant identifier.
    ///   - platformDecryptor: the platform integrator's keys, for every other (registered) merchant.
    ///   - googlePay: each merchant's Google Pay settings, by merchant identifier.
    ///   - vault: seals the requests kept for re-sending unknown payments.
    public init(
        orderPayments: any OrderPayments, refunds: any Refunds, mandates: any MandateRecords, processors: PaymentProcessors,
        verifier: TokenVerifier,
        decryptors: [String: TokenDecryptor],
        platformDecryptor: TokenDecryptor? = nil, googlePay: [String: GooglePaySettings] = [:], vault: PaymentVault,
        time: TimeSource = .system, policy: Policy = Policy(),
        logger: Logger = Logger(label: "orchard.payments")
    ) {
        self.orderPayments = orderPayments
        self.refunds = refunds
        self.mandates = mandates
        self.processors = processors
        self.verifier = verifier
        self.decryptors = decryptors
        self.platformDecryptor = platformDecryptor
        self.googlePay = googlePay
        self.vault = vault
        self.time = time
        self.policy = policy
        self.logger = logger
    }

    /// Authorizes an order with the shopper's token; returns the authorized payment.
    public func authorize(_ attempt: Attempt) async throws(CoreError) -> PaymentRecord {
        do {
            let payment = try await authorizeOnce(attempt)
            Counter(label: "orchard_authorizations_total", dimensions: [("outcome", "authorized")]).increment()
            return payment
        } catch {
            Counter(label: "orchard_authorizations_total", dimensions: [("outcome", error.code.rawValue)]).increment()
            throw error
        }
    }

    /// Sends a pending payment's reference and records the answer along the lifecycle; an
    /// agreement's first payment, once authorized, creates its mandate in the same move.
    func send(_ payment: PaymentRecord, _ request: AuthorizationRequest, through processor: any PaymentProcessor)
        async throws(CoreError) -> PaymentRecord
    {
        try await record(payment, through: processor, operation: "authorize", capture: request.order.priced.capture) {
            try await processor.authorize(request)
        } mandate: { outcome in
            mandate(for: payment, of: request.order, outcome: outcome, processor: processor.name)
        }
    }

    /// Makes one call for a pending payment's reference (`call`) and records its answer along
    /// the lifecycle, with the mandate `mandate` makes of an authorization, if any, and the
    /// automatic capture an authorization owes when the order's `capture` says so.
    func record(
        _ payment: PaymentRecord, through processor: any PaymentProcessor, operation: String, capture: CaptureMode? = nil,
        call: () async throws -> AuthorizationOutcome, mandate: (AuthorizationOutcome) -> MandateRecord? = { _ in nil }
    ) async throws(CoreError) -> PaymentRecord {
        let started = ContinuousClock.now
        var outcome: AuthorizationOutcome?
        var failure = ""
        do {
            outcome = try await call()
        } catch {
            failure = "\(error)"
        }
        let event: PaymentLifecycle.Event =
            switch outcome?.status {
            case .authorized: .authorized
            case .refused: .declined
            // A rejection of a re-send says nothing about what the earlier send did.
            case .failed: payment.sends == 1 ? .rejected : .noAnswer
            case .pending: .processorPending
            case nil: .noAnswer
            }
        let elapsed = ContinuousClock.now - started
        let label =
            switch event {
            case .noAnswer: "no_answer"
            case .processorPending: "processor_pending"
            default: "\(event)"
            }
        EngineMetrics.processorCall(processor: processor.name, operation: operation, outcome: label, elapsed: elapsed)
        // Built only when a line is written: at the usual levels an authorization logs nothing,
        // and formatting these strings for every payment was CPU spent on no output.
        let metadata = { () -> Logger.Metadata in
            var metadata: Logger.Metadata = [
                "order": "\(payment.orderId)", "payment": "\(payment.id)", "processor": "\(processor.name)",
                "reference": "\(payment.reference)", "send": "\(payment.sends)",
                "ms": "\(elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000)",
            ]
            if let outcome {
                metadata["code"] = "\(outcome.code ?? "-")"
                metadata["reason"] = "\(outcome.message ?? "-")"
            } else {
                metadata["error"] = "\(failure)"
            }
            return metadata
        }
        // A pending answer keeps the processor's reference: the processor is asked about it later.
        let unknown = event == .noAnswer || event == .processorPending
        let change = PaymentTransition(
            paymentId: payment.id, orderId: payment.orderId, move: PaymentLifecycle.move(event), at: time.now,
            outcome: outcome.map { event == .noAnswer ? AuthorizationOutcome(status: $0.status, code: $0.code, message: $0.message) : $0 },
            nextReconcileAt: unknown ? policy.nextReconcile(after: payment.reconcileAttempts, now: time.now) : nil,
            mandate: event == .authorized ? outcome.flatMap(mandate) : nil, held: payment,
            captureDueAt: AutomaticCapture.dueAt(after: PaymentLifecycle.move(event), capture: capture, now: time.now))
        let recorded: PaymentRecord?
        do {
            recorded = try await orderPayments.transition(change)
        } catch {
            logger.critical(
                "the processor answered but the answer could not be stored: the payment stays pending until reconciled",
                metadata: metadata().merging(["event": "\(event.rawValue)", "storeError": "\(error)"]) { $1 })
            throw CoreError.unknownOutcome
        }
        guard let recorded else {
            logger.error(
                "the payment moved while its reference was with the processor; the reconciler settles it",
                metadata: metadata().merging(["event": "\(event.rawValue)"]) { $1 })
            throw CoreError.unknownOutcome
        }
        switch event {
        case .authorized:
            logger.info(
                "payment authorized", metadata: metadata().merging(["amount": "\(payment.amount) \(payment.currency)"]) { $1 })
            if change.mandate != nil { await endIfRetired(recorded, through: processor) }
            if recorded.captureDueAt != nil { onCaptureDue?(recorded.id) }
            return recorded
        case .declined:
            logger.notice("payment refused", metadata: metadata())
            throw CoreError(.declined, "Your card was declined. Please try another card; nothing was charged.")
        case .rejected:
            logger.error("processor rejected the request", metadata: metadata())
            throw CoreError(
                .processorRejected, "The payment could not be processed right now; nothing was charged. Please try again later.")
        case .processorPending:
            logger.warning(
                "processor holds the payment without an outcome (no funds held yet): unknown, to be asked again, never re-sent",
                metadata: metadata())
            throw CoreError.unknownOutcome
        default:
            logger.error("processor gave no definite answer: payment outcome unknown", metadata: metadata())
            throw CoreError.unknownOutcome
        }
    }

    /// The merchant's processing keys; a merchant without its own was registered by the
    /// platform, whose keys its tokens are encrypted to.
    func decryptor(forMerchant merchantIdentifier: String) -> TokenDecryptor? {
        decryptors[merchantIdentifier] ?? platformDecryptor
    }

    /// Runs a store call; any failure is a storage error before anything was sent.
    func storage<T>(_ body: () async throws -> T) async throws(CoreError) -> T {
        do {
            return try await body()
        } catch {
            logger.error("store failure", metadata: ["error": "\(error)"])
            throw CoreError.beforeSending(
                error, else: CoreError(.storage, "the payment service is unavailable; nothing was charged"))
        }
    }
}
