import ApplePay
import Foundation
import Logging
import Metrics

/// Mandates on the money path: an agreement's first payment creates one when the processor
/// stored the credential, and a merchant-initiated charge follows the same claim, send and
/// record steps as a shopper's payment (a retry re-sends the reference of an unknown attempt).
extension PaymentsEngine {
    /// The mandate an authorized first payment of an agreement sets up; nil for any other
    /// payment, or when the processor stored no credential (logged: the shop then has a paid
    /// order and no mandate, and must ask the shopper again for later charges).
    func mandate(for payment: PaymentRecord, of order: OrderRecord, outcome: AuthorizationOutcome, processor: String)
        -> MandateRecord?
    {
        guard let agreement = order.priced.agreement else { return nil }
        guard let credential = outcome.storedCredential else {
            logger.error(
                "the processor authorized an agreement's first payment but stored no credential: no mandate was created",
                metadata: ["payment": "\(payment.id)", "order": "\(order.id)", "processor": "\(processor)"])
            return nil
        }
        // Owned, once stored, by the order's owner as the move reads it (``PaymentTransition/mandate(ownedBy:)``).
        return MandateRecord(
            id: MandateRecord.newIdentifier(), merchantIdentifier: order.merchantIdentifier, kind: agreement.type, paymentId: payment.id,
            orderId: order.id, processor: processor, credential: credential, merchantTokenIdentifier: payment.merchantTokenIdentifier,
            merchantTokenMetadata: payment.merchantTokenMetadata, currency: payment.currency, network: payment.network,
            lastFour: payment.lastFour, description: agreement.paymentDescription, createdAt: time.now)
    }

    /// Ends the mandate a move just created when the order's owner, as the move read it, was a
    /// retired tenant (``PaymentTransition/mandate(ownedBy:)``): the payment was at the processor
    /// while its merchant was retired, so no one may charge the mandate and nothing else would
    /// delete its credential. `processor` is the one that answered, the retired tenant's: the
    /// engine still holds it, though the merchant's settings are gone. A retirement that moved
    /// the mandate to its record key after the move may end it too; the compare-and-set lets one
    /// of them delete. A failure is logged: the mandate stays active under a key no one charges.
    func endIfRetired(_ payment: PaymentRecord, through processor: any PaymentProcessor) async {
        guard let id = payment.mandateId else { return }
        do {
            guard let mandate = try await mandates.mandate(id: id), mandate.state == .active,
                RetiredTenant.isRecordKey(mandate.merchantIdentifier)
            else { return }
            if try await MandateLifecycle.end(
                mandate, reason: TenantRetirement.endedReason, in: mandates, through: processor, at: time.now, logger: logger) != nil
            {
                logger.warning(
                    "an agreement's first payment was answered after its merchant was retired: its mandate was ended",
                    metadata: ["payment": "\(payment.id)", "mandate": "\(id)", "owner": "\(mandate.merchantIdentifier)"])
            }
        } catch {
            logger.error(
                "the mandate of a retired merchant's payment could not be ended: end it and delete its credential at the processor",
                metadata: ["payment": "\(payment.id)", "mandate": "\(id)", "error": "\(error)"])
        }
    }

    /// Charges an active mandate for its charge order (created by the caller with the amount):
    /// merchant-initiated, through the processor that stored the credential. A retry for the same
    /// order re-sends the reference of an unknown attempt; a paid order answers its payment.
    public func charge(_ mandate: MandateRecord, orderId: String) async throws(CoreError) -> PaymentRecord {
        guard let order = try await storage({ try await orderPayments.order(id: orderId) }),
            order.merchantIdentifier == mandate.merchantIdentifier
        else { throw CoreError(.notFound, "there is no such charge") }
        // A charge is one attempt: its answer, once definite, is the answer to every retry with
        // the same Idempotency-Key (a declined charge is charged again only under a new key).
        let earlier = try await storage { try await orderPayments.payments(orderId: order.id) }
        if let last = earlier.last, PaymentLifecycle.isResolved(last.state) { return last }
        guard mandate.state == .active else {
            throw CoreError(.invalidState, "the mandate has ended (\(mandate.endedReason ?? "ended")): it cannot be charged")
        }
        let processor = processors.processor(forMerchant: mandate.merchantIdentifier)
        guard processor.name == mandate.processor else {
            throw CoreError(
                .invalidState, "the mandate's credential is stored at \(mandate.processor), but the merchant now uses \(processor.name)")
        }
        guard order.priced.currency == mandate.currency else {
            throw CoreError(.paymentMismatch, "a charge of this mandate must be in \(mandate.currency)")
        }
        // A retry of an unknown charge asks the processor before it sends anything.
        var expectedSends: Int?
        var resending: String?
        if let unknown = earlier.last, unknown.state == .unknown {
            switch try await gate(unknown, through: processor) {
            case .resend(let sends):
                expectedSends = sends
                resending = unknown.id
            case .settled(let settled): return settled
            }
        }
        let now = time.now
        let draft = PaymentRecord(
            id: RecordIdentifier.random(), orderId: order.id, transactionId: "mit_" + RecordIdentifier.random(), state: .pending,
            amount: order.priced.total, currency: order.priced.currency, network: mandate.network, lastFour: mandate.lastFour,
            processor: processor.name, reference: "", mandateId: mandate.id, merchantTokenIdentifier: mandate.merchantTokenIdentifier,
            createdAt: now, lastSentAt: now)
        let sealed: [UInt8]
        do {
            sealed = try vault.seal(RetryRequest(token: nil, mandateId: mandate.id), for: resending ?? draft.id)
        } catch {
            throw CoreError(.storage, "the charge could not be recorded; nothing was charged")
        }
        let claimed = try await claim(
            PaymentClaim(
                draft: draft, transactionId: draft.transactionId, sealedRequest: sealed, priceVersion: order.priceVersion,
                expectedSends: expectedSends, resending: resending)
        )
        let request = MandateChargeRequest(mandate: mandate, order: order, reference: claimed.reference, sends: claimed.sends)
        return try await record(claimed, through: processor, operation: "charge_mandate") {
            try await processor.chargeMandate(request)
        }
    }

    /// A mandate charge as first sent, for the reconciler.
    func rebuildCharge(_ payment: PaymentRecord, order: OrderRecord, mandateId: String) async throws(CoreError)
        -> MandateChargeRequest
    {
        guard let mandate = try await storage({ try await mandates.mandate(id: mandateId) }) else {
            throw CoreError(.notFound, "its mandate \(mandateId) is missing")
        }
        return MandateChargeRequest(mandate: mandate, order: order, reference: payment.reference, sends: payment.sends)
    }
}
