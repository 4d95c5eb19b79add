import ApplePay
import Foundation

/// An order as stored: the server's priced order and what binds a token to it.
public struct OrderRecord: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Can be repriced and paid.
        case open
        /// A payment attempt is with the processor right now; the order cannot change.
        case pending
        /// Exactly one payment is authorized (or settled).
        case paid
        /// The processor did not say whether it charged: a retry reuses the same idempotency reference.
        case unknown
        /// Its payment was cancelled (voided) after authorization: closed for good.
        case cancelled
        /// Open past its expiry: closed for good, nothing was paid.
        case expired
    }

    public var id: String
    public var merchantIdentifier: String
    public var state: State
    public var priced: PricedOrder
    /// The applicationData bytes sent in the payment request; tokens carry their SHA-256.
    public var applicationData: [UInt8]
    public var createdAt: Date
    /// When an open order stops taking payments (payment requests); nil: never.
    public var expiresAt: Date?
    /// Counts the order's pricings, from 1: each repricing makes the next. A payment is claimed
    /// for the version its token was checked against, so a repricing in between wins over it.
    public var priceVersion: Int

    public init(
        id: String, merchantIdentifier: String, state: State, priced: PricedOrder, applicationData: [UInt8], createdAt: Date,
        expiresAt: Date? = nil, priceVersion: Int = 1
    ) {
        self.priceVersion = priceVersion
        self.expiresAt = expiresAt
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.state = state
        self.priced = priced
        self.applicationData = applicationData
        self.createdAt = createdAt
    }
}

extension OrderRecord {
    /// A new open order at price version 1 under a fresh identifier, bound to its tokens by
    /// ``binding(orderId:)``, taking payments until `openFor` after `now`.
    public static func opened(merchantIdentifier: String, priced: PricedOrder, at now: Date, openFor: TimeInterval) -> OrderRecord {
        let id = RecordIdentifier.random()
        return OrderRecord(
            id: id, merchantIdentifier: merchantIdentifier, state: .open, priced: priced, applicationData: binding(orderId: id),
            createdAt: now, expiresAt: now.addingTimeInterval(openFor))
    }

    /// The applicationData an order's payment request carries, `orchard-order:<id>`: Apple signs
    /// its SHA-256 into the token, so a token pays only the order it was made for.
    public static func binding(orderId: String) -> [UInt8] {
        Array("orchard-order:\(orderId)".utf8)
    }

    /// The order at its next price version, priced so.
    public func repriced(_ priced: PricedOrder) -> OrderRecord {
        var next = self
        next.priced = priced
        next.priceVersion = priceVersion &+ 1
        return next
    }
}

/// Where a payment stands. ``PaymentLifecycle`` lists the moves between these states.
public enum PaymentState: String, Sendable, Codable, CaseIterable {
    /// Being sent to the processor under its reference right now.
    case pending
    case authorized
    /// The issuer or processor declined: nothing was charged.
    case refused
    /// The processor refused the request itself (credentials, validation) on its first send: nothing was charged.
    case failed
    /// No definite answer (5xx, 409 in progress, timeout, dropped connection, unreadable body): the
    /// reference is re-sent until the processor's answer for it arrives, or an operator resolves it.
    case unknown
    /// Written by Orchard before 0.4 (an unknown attempt answered by a later row); no longer produced.
    case superseded
    case settled
    case cancelled
}

/// A payment as stored. Never the device account number, cryptogram or expiry.
public struct PaymentRecord: Sendable, Codable, Equatable {
    public var id: String
    public var orderId: String
    /// The token's header.transactionId (hex); unique: a replay loses.
    public var transactionId: String
    public var state: PaymentState
    public var amount: Int64
    /// ISO 4217 alphabetic code.
    public var currency: String
    public var network: String?
    public var lastFour: String
    /// `record`, `worldpay` or `worldline`.
    public var processor: String
    /// The idempotency reference sent to the processor; reused by a retry after an unknown outcome.
    public var reference: String
    /// The processor's own ID for the payment.
    public var processorReference: String?
    /// The processor's refusal or error code and description.
    public var processorCode: String?
    public var processorMessage: String?
    /// Follow-up actions the processor offered (`settle`, `cancel` at authorization; `refund`,
    /// `partialRefund` once settled, for processors that hand them out) and their URLs.
    public var links: [String: String]
    /// How often the reference was sent: by the shopper's first tap, their retries and the reconciler.
    public var sends: Int = 1
    /// Background re-sends so far, and when the next one is due (while unknown).
    public var reconcileAttempts: Int = 0
    public var nextReconcileAt: Date?
    /// The mandate this payment set up (its first payment) or charged (a merchant-initiated charge).
    public var mandateId: String?
    /// Apple's merchant token identifier and the card details it came with, when the token was
    /// a merchant token; never the MPAN itself.
    public var merchantTokenIdentifier: String?
    public var merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata?
    /// The first send: when the reference was first sent.
    public var createdAt: Date
    public var updatedAt: Date
    /// When the reference was last sent (first send, retry or re-send): a processor's "not
    /// found" counts only once its records' lag has passed since then. Nil in rows written
    /// before Orchard kept it; ``sentLast`` then reads ``updatedAt``.
    public var lastSentAt: Date?

    public init(
        id: String, orderId: String, transactionId: String, state: PaymentState, amount: Int64, currency: String, network: String?,
        lastFour: String, processor: String, reference: String, processorReference: String? = nil, processorCode: String? = nil,
        processorMessage: String? = nil, links: [String: String] = [:], sends: Int = 1, reconcileAttempts: Int = 0,
        nextReconcileAt: Date? = nil, mandateId: String? = nil, merchantTokenIdentifier: String? = nil,
        merchantTokenMetadata: DecryptedPayment.MerchantTokenMetadata? = nil, createdAt: Date, updatedAt: Date? = nil,
        lastSentAt: Date? = nil
    ) {
        self.lastSentAt = lastSentAt
        self.mandateId = mandateId
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.merchantTokenMetadata = merchantTokenMetadata
        self.id = id
        self.orderId = orderId
        self.transactionId = transactionId
        self.state = state
        self.amount = amount
        self.currency = currency
        self.network = network
        self.lastFour = lastFour
        self.processor = processor
        self.reference = reference
        self.processorReference = processorReference
        self.processorCode = processorCode
        self.processorMessage = processorMessage
        self.links = links
        self.sends = sends
        self.reconcileAttempts = reconcileAttempts
        self.nextReconcileAt = nextReconcileAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }
}

extension PaymentRecord {
    /// The reference's last send; for a row from before Orchard kept it, its last change, which
    /// is never earlier than its last send.
    public var sentLast: Date { lastSentAt ?? updatedAt }
}

/// Why a store failed: the storage itself (a full disk, a lost connection, a row it cannot
/// read). A business rule's refusal is a ``CoreError``.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The storage itself failed.
        case storage
        /// The storage could not be reached (no database connection within its bound, the
        /// connection lost, a full disk, an unwritable file): nothing was written, and the same
        /// call may succeed once it is back.
        case unavailable
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}

/// Durable orders and payments. SQLite is the embedded default; PostgreSQL serves several
/// instances sharing one database.
///
/// Several instances: every state move is a compare-and-set in one transaction, so two
/// instances never both apply the same move. Background work (re-sending unknown payments and
/// refunds, delivering webhooks) is taken with a lease: one transaction picks the due items and
/// pushes them out of sight until the lease ends, so each is worked by one instance at a time;
/// an instance that dies lets its leases run out and another takes the items over (webhooks
/// are thus delivered at least once, under the same event ID). Instances' clocks must agree
/// (NTP): leases, staleness and expiry compare times each instance writes.
///
/// The store is the composition of one small repository per aggregate; a consumer holds only
/// the ones it uses, and only the composition root (which opens the store and closes it) holds
/// the whole.
public protocol OrchardStore: OrderPayments, Refunds, MandateRecords, PaymentRequests, APIKeys, WebhookOutbox, TokenEventInbox,
    MerchantRegistry, GuardRecords, RecordPurging, OperationalCounting
{}

/// Orders and their payments: the order is the unit of work. Claiming a payment and moving it
/// lock the order and compare-and-set the payment's (and the order's) state in one
/// transaction, with the moves' webhook events; a first payment that sets up a mandate creates
/// it in the same transaction (``PaymentTransition/mandate``). Also the background leases on
/// unknown payments, the settle and cancel rights, and the sealed requests kept for re-sends.
public protocol OrderPayments: Sendable {
    func insert(_ order: OrderRecord) async throws
    func order(id: String) async throws -> OrderRecord?
    /// Replaces an open order's pricing with `order`'s, a compare-and-set on its price version:
    /// the stored order must be at `order.priceVersion - 1` (``OrderRecord/repriced(_:)`` makes
    /// such a record). Fails with ``CoreError/Code/orderNotOpen`` when the order is not open and
    /// ``CoreError/Code/orderChanged`` when it is at another version, and then changes nothing.
    func updateOpen(_ order: OrderRecord) async throws
    /// In one transaction: claims the token's transaction ID, then either opens a new attempt on an
    /// open order (a new reference, `<orderId>-<n>`) or takes the order's unknown attempt back to
    /// `pending` to re-send its reference. The order becomes `pending`. Fails with
    /// ``CoreError/Code/duplicateTransaction``, ``CoreError/Code/paymentInProgress`` or
    /// ``CoreError/Code/orderNotOpen`` and then changes nothing.
    func claimPayment(_ claim: PaymentClaim) async throws -> PaymentRecord
    /// Applies one move of ``PaymentLifecycle`` as a compare-and-set on the payment's (and the
    /// order's) expected state, in one transaction; nil, changing nothing, when either was elsewhere.
    func transition(_ change: PaymentTransition) async throws -> PaymentRecord?
    /// The sealed request kept for re-sending an unresolved payment; nil once it is resolved.
    func retryPayload(paymentId: String) async throws -> [UInt8]?
    /// Leases unknown payments whose next re-send is due at `date`, oldest due first: in one
    /// transaction their next re-send moves to `leaseEnd` (the records come back so), so no other
    /// caller gets them before then. The holder re-sends each with the `resend` move before
    /// `leaseEnd`; one it leaves is due again at `leaseEnd`.
    func leasePaymentsForReconciliation(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [PaymentRecord]
    /// Pending payments untouched since before `date`: their process died or its write failed.
    func stalePendingPayments(before date: Date) async throws -> [PaymentRecord]
    /// Takes the right to act on a payment in `state` (a settle or cancel at its processor) until
    /// `leaseEnd`: false when it is in another state or someone else holds an unexpired right.
    /// Every move of the payment gives it back, as does ``releaseOperation(paymentId:)``; a
    /// holder that dies lets it run out.
    func claimOperation(paymentId: String, in state: PaymentState, at date: Date, until leaseEnd: Date) async throws -> Bool
    /// Gives back the right ``claimOperation(paymentId:in:at:until:)`` took (the processor refused).
    func releaseOperation(paymentId: String) async throws
    /// Moves an unknown payment's next re-send (nil: none, an operator's); not a state change.
    func deferReconciliation(paymentId: String, until date: Date?) async throws -> Bool
    func payments(orderId: String) async throws -> [PaymentRecord]
    func payment(id: String) async throws -> PaymentRecord?
    /// Newest first; every state when `state` is nil.
    func payments(state: PaymentState?, limit: Int) async throws -> [PaymentRecord]
}

/// The merchants a platform integrator registered, with their domains and their sealed
/// settings. Retiring one is this repository's unit of work although it also revokes the
/// merchant's API keys and skips its undelivered webhook events: one transaction, so nothing of
/// the tenant survives it (see ``deleteRegistration(partnerIdentifier:at:)``).
public protocol MerchantRegistry: Sendable {
    /// Merchants registered through the Web Merchant Registration API, with their domains.
    func registeredMerchants() async throws -> [RegisteredMerchant]
    /// Creates or replaces a registered merchant and its domain set; a domain another
    /// merchant holds fails with ``CoreError/Code/domainTaken`` and changes nothing.
    func saveRegistration(_ merchant: RegisteredMerchant) async throws
    /// Retires a registered merchant, in one transaction: forgets it, its domains and its sealed
    /// settings, revokes its API keys at `date`, and marks its undelivered webhook events
    /// `skipped` (``RetiredTenant/skippedEventError``), so nothing of this tenant reaches a later
    /// one registered under the same identifier. Also run before a new registration under an
    /// identifier that has none, to clear what an earlier tenant left.
    func deleteRegistration(partnerIdentifier: String, at date: Date) async throws
    /// Registered merchants' settings (processor, webhook), sealed by the server: opaque here.
    func sealedMerchantSettings() async throws -> [String: [UInt8]]
    /// Creates or replaces one registered merchant's sealed settings.
    func saveSealedMerchantSettings(partnerIdentifier: String, sealed: [UInt8], at date: Date) async throws
}

/// A merchant a platform integrator registered with Apple, as the registry keeps it.
public struct RegisteredMerchant: Sendable, Codable, Equatable {
    public var partnerIdentifier: String
    public var name: String
    public var encryptTo: String
    public var merchantUrl: String?
    /// Lowercased, in registration order.
    public var domains: [String]
    public var createdAt: Date
    public var updatedAt: Date

    public init(
        partnerIdentifier: String, name: String, encryptTo: String, merchantUrl: String?, domains: [String], createdAt: Date,
        updatedAt: Date
    ) {
        self.partnerIdentifier = partnerIdentifier
        self.name = name
        self.encryptTo = encryptTo
        self.merchantUrl = merchantUrl
        self.domains = domains
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// A registration without domains is leaving: unregistering its last domain took them out of
    /// the registry before Apple was asked (``TenantRetirement/stopServing(_:)``), and its
    /// retirement has not finished. Nothing serves, watches or repairs it.
    public var isLeaving: Bool { domains.isEmpty }
}

/// Identifiers of orders and payments: 128 random bits in hex, unguessable from one another.
public enum RecordIdentifier {
    /// The longest ID a caller's path or body may name: more than any Orchard makes (32 hex
    /// digits) or keeps from elsewhere, so a longer one is not looked up at all.
    public static let maximumLength = 64

    /// Whether `id` is short enough to look up (an ID from a path, a body or a client).
    public static func isLookup(_ id: String) -> Bool { id.utf8.count <= maximumLength }

    public static func random() -> String {
        // Two 64-bit draws rather than sixteen one-byte ones: each draw is a getrandom(2) call,
        // and several identifiers are made for every payment.
        var generator = SystemRandomNumberGenerator()
        let words: [UInt64] = [generator.next(), generator.next()]
        return Hex.encode(words.flatMap { word in (0..<8).map { UInt8(truncatingIfNeeded: word >> (8 * $0)) } })
    }
}

/// What retiring a registered merchant leaves in the outbox.
public enum RetiredTenant {
    /// The error recorded on a webhook event its tenant was unregistered before it was delivered.
    public static let skippedEventError = "the merchant was unregistered before this event was delivered"

    /// The tables whose `merchant` column a retirement moves to ``recordKey(for:)``: what the
    /// tenant owned. Payments and refunds belong to their orders.
    public static let ownedTables = ["orders", "payment_requests", "mandates", "api_keys", "webhook_events", "token_events"]

    /// The owner a retired tenant's records move to, in the retirement's own transaction:
    /// `retired/<partner>/<16 hex digits>`. No partner ID can be it (their alphabet has no `/`),
    /// nor can a merchant ID, so a later registration under the same identifier owns none of the
    /// old records (its checks compare the owner) and hears of none of them; and each retirement
    /// gets its own.
    public static func recordKey(for partner: String) -> String {
        "retired/\(partner)/\(RecordIdentifier.random().prefix(16))"
    }
}
