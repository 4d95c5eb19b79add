import ApplePay
import Crypto
import Foundation
import Logging

/// What a shop sends to charge a mandate (`POST /v1/mandates/{id}/charges`). Re-encoded with
/// sorted keys and followed by the mandate's ID, it is the idempotency fingerprint, so its fields
/// and their names are the request's and must stay so: a fingerprint stored before an upgrade
/// must still match the same retry after it.
public struct MandateChargeDraft: Codable, Sendable, Equatable {
    /// Minor units of the mandate's currency.
    public var amount: Int64
    /// The shop's own reference for this charge (its invoice number).
    public var reference: String
    public var metadata: [String: String]?
    /// For a recurring or deferred mandate: charge above the agreement's amount, saying why.
    public var allowAmountAbove: AmountAbove?

    public struct AmountAbove: Codable, Sendable, Equatable {
        public var reason: String

        public init(reason: String) { self.reason = reason }
    }

    public init(amount: Int64, reference: String, metadata: [String: String]? = nil, allowAmountAbove: AmountAbove? = nil) {
        self.amount = amount
        self.reference = reference
        self.metadata = metadata
        self.allowAmountAbove = allowAmountAbove
    }

    /// SHA-256 of the draft encoded with sorted keys, then the mandate's ID: the same key with
    /// the same body for another mandate is another charge's body.
    public func fingerprint(mandateId: String) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array(SHA256.hash(data: try encoder.encode(self) + Data(mandateId.utf8)))
    }
}

/// A charge as the shop sees it: its payment, and the mandate as it stands after it.
public struct MandateChargeView: Encodable, Sendable {
    public var payment: PaymentView
    public var mandate: MandateView
    /// The charge's Wallet order, when the merchant has `walletOrders.mandateCharges`: for the
    /// shop's app to add to Wallet (FinanceKit), as a sheet would have. In the first answer only.
    public var orderDetails: WalletOrderDetails?
}

/// The shop's side of its mandates: reading them and charging them merchant-initiated. A charge
/// is a payment request of its own (one per Idempotency-Key) with an order for the amount, paid
/// by the mandate through ``PaymentsEngine/charge(_:orderId:)``: a retry with the same key finds
/// that order, so an unknown attempt is re-sent under the same reference and a definite answer
/// is answered again, never charged twice. Another merchant's mandate is "not found".
public struct MandateChargeService: Sendable {
    /// Mandates.
    let mandates: any MandateRecords
    /// Payment requests and the orders they open.
    let paymentRequests: any PaymentRequests
    /// Orders and their payments.
    let orderPayments: any OrderPayments
    let engine: PaymentsEngine
    let time: TimeSource
    /// Told of each charge that took money, so Wallet's list of the token's payments follows.
    public var usage: MerchantTokenUsageService?

    /// How long a charge's order stays open: retries under its Idempotency-Key find it meanwhile.
    public static let chargeOpenFor: TimeInterval = 86_400
    /// The most mandates one list answers.
    public static let listLimit = 100

    /// A service over the repositories it uses: mandates, the charge's payment request and order, and its payments.
    public init(
        mandates: any MandateRecords, paymentRequests: any PaymentRequests, orderPayments: any OrderPayments, engine: PaymentsEngine,
        time: TimeSource
    ) {
        self.mandates = mandates
        self.paymentRequests = paymentRequests
        self.orderPayments = orderPayments
        self.engine = engine
        self.time = time
    }
    /// The merchant's mandate `id`; another merchant's is "not found", never "forbidden".
    public func mandate(id: String, merchantIdentifier: String) async throws -> MandateRecord {
        guard RecordIdentifier.isLookup(id), let mandate = try await mandates.mandate(id: id),
            mandate.merchantIdentifier == merchantIdentifier
        else { throw CoreError(.notFound, "there is no mandate \(id.prefix(64))") }
        return mandate
    }

    /// The merchant's mandates, newest first, of every state when `state` is nil.
    public func mandates(merchantIdentifier: String, state: MandateRecord.State?) async throws -> [MandateRecord] {
        try await mandates.mandates(merchantIdentifier: merchantIdentifier, state: state, limit: Self.listLimit)
    }

    /// Charges the merchant's mandate `mandateId` for `draft`, once per Idempotency-Key: the first
    /// call creates the charge (`created` true); a retry with the same draft answers it (re-sending
    /// an unknown attempt under its reference); another draft under the key is refused.
    /// - Parameter logger: the request's logger, so a charge above the agreement is logged with it.
    /// - Throws: ``CoreError`` for the shop's input and the mandate's state (nothing is then
    ///   created), ``CoreError`` for the charge's own refusal or unknown outcome.
    public func charge(
        _ draft: MandateChargeDraft, mandateId: String, idempotencyKey key: String, merchantIdentifier: String, logger: Logger
    ) async throws -> (view: MandateChargeView, created: Bool) {
        let mandate = try await mandate(id: mandateId, merchantIdentifier: merchantIdentifier)
        guard Money.isPositiveAmount(draft.amount) else {
            throw CoreError(.invalidRequest, "amount must be a whole number of minor units from 1 to \(ShopCart.maximumAmount)")
        }
        let (_, metadata) = try ShopInput.checkedReference(
            draft.reference, metadata: draft.metadata, naming: "the shop's own reference for this charge")
        // Checked before a charge order is made, so an ended mandate leaves nothing behind.
        guard mandate.state == .active else {
            throw CoreError(.invalidState, "the mandate has ended (\(mandate.endedReason ?? "ended")): it cannot be charged")
        }
        try await checkBound(draft, of: mandate, logger: logger)
        let cart = ShopCart(currency: mandate.currency, countryCode: "ZZ", amount: draft.amount)
        let order = try chargeOrder(cart, merchantIdentifier: merchantIdentifier)
        let now = order.createdAt
        let record = PaymentRequestRecord(
            id: order.id, merchantIdentifier: merchantIdentifier, reference: draft.reference, metadata: metadata, cart: cart,
            idempotencyKey: Self.idempotencyKey(key), fingerprint: try draft.fingerprint(mandateId: mandate.id),
            expiresAt: now.addingTimeInterval(Self.chargeOpenFor), createdAt: now)
        let (stored, created): (PaymentRequestRecord, Bool)
        do {
            (stored, created) = try await paymentRequests.createPaymentRequest(record, order: order)
        } catch let error as CoreError where error.code == .idempotencyMismatch {
            throw CoreError(.idempotencyMismatch, "this Idempotency-Key was used for another charge or body")
        }
        let payment = try await engine.charge(mandate, orderId: stored.id)
        // The engine throws a decline or a rejection when it happens; a retry finds the charge's
        // one attempt already decided and is answered the same way, not charged again.
        switch payment.state {
        case .refused: throw CoreError(.declined, "the issuer declined the charge: nothing was charged")
        case .failed: throw CoreError(.processorRejected, "the processor refused the charge request: nothing was charged")
        default:
            if [.authorized, .settled].contains(payment.state) { await usage?.mandateCharged(mandate) }
            let current = try await mandates.mandate(id: mandate.id) ?? mandate
            return (
                MandateChargeView(payment: PaymentView(payment: payment, request: stored, refunded: 0), mandate: MandateView(current)),
                created
            )
        }
    }

    /// The key a charge's payment request is stored under: a shop's payment request and a charge
    /// under the same Idempotency-Key are two requests, not one replayed.
    static func idempotencyKey(_ key: String) -> String { "mandate-charge:" + key }

    /// The open order a charge of `cart` creates: its own ID, open for ``chargeOpenFor``, bound to
    /// `orchard-charge:<id>` rather than a shopper's `orchard-order:<id>` (no sheet pays it).
    func chargeOrder(_ cart: ShopCart, merchantIdentifier: String) throws(CoreError) -> OrderRecord {
        let priced: PricedOrder
        do throws(ApplePayError) {
            priced = try cart.price()
        } catch {
            throw CoreError(.invalidRequest, error.message)
        }
        let now = time.now
        let id = RecordIdentifier.random()
        return OrderRecord(
            id: id, merchantIdentifier: merchantIdentifier, state: .open, priced: priced,
            applicationData: Array("orchard-charge:\(id)".utf8),
            createdAt: now, expiresAt: now.addingTimeInterval(Self.chargeOpenFor))
    }

    /// The agreement the shopper accepted bounds the charge (``MandateChargeBound``).
    func checkBound(_ draft: MandateChargeDraft, of mandate: MandateRecord, logger: Logger) async throws {
        guard let agreement = try await orderPayments.order(id: mandate.orderId)?.priced.agreement else {
            throw CoreError(.inconsistent, "the order that set up this mandate is missing: it cannot be charged")
        }
        try MandateChargeBound.check(amount: draft.amount, agreement: agreement, reasonAbove: draft.allowAmountAbove?.reason)
        if let reason = draft.allowAmountAbove?.reason {
            logger.notice(
                "a mandate is charged above its agreement's amount, as the shop asked",
                metadata: ["mandate": "\(mandate.id)", "amount": "\(draft.amount)", "reason": "\(reason)"])
        }
    }
}
