import ApplePay
import Crypto
import Foundation
import GooglePay
import Logging

/// An authorization up to its send: the order, the token checked against it, the claim; and
/// the order decided again from a read when it was decided from the order as remembered.
extension PaymentsEngine {
    func authorizeOnce(_ attempt: Attempt) async throws(CoreError) -> PaymentRecord {
        let claimable = try await claimableOrder(attempt)
        let step: ClaimStep
        do {
            step = try await claimStep(attempt, from: claimable)
        } catch  where claimable.remembered && Self.decidedFromTheOrder(error) {
            // Decided from the order as this store last wrote it, which another instance may
            // have moved or repriced since: decided again from the order as it is. Nothing was
            // claimed or sent, so the second decision is the only one. A token that matched the
            // price it was checked against, and lost the claim to a repricing, is answered as a
            // read before the repricing would have been: the order changed, pay again.
            let read = try await claimableOrder(attempt, remembered: false)
            if error.code == .orderChanged, read.order.priceVersion != claimable.order.priceVersion { throw error }
            // At the same row version the order is as remembered, so the decision would be the
            // same: a token refused by its checks is not verified twice. A claim's own refusal
            // (`orderChanged`) says something moved, its transaction ID's use among them: decided again.
            if error.code != .orderChanged, read.basis != nil, read.basis?.version == claimable.basis?.version { throw error }
            step = try await claimStep(attempt, from: read)
        }
        switch step {
        case .settled(let payment): return payment
        case .send(let claimed, let request, let processor): return try await send(claimed, request, through: processor)
        }
    }

    /// What an authorization does once its claim is decided: send the claimed payment, or
    /// answer with the earlier send's outcome.
    private enum ClaimStep {
        case send(PaymentRecord, AuthorizationRequest, any PaymentProcessor)
        case settled(PaymentRecord)
    }

    /// The refusals that depend on the order's state, price or owner, as a claim found them.
    private static func decidedFromTheOrder(_ error: CoreError) -> Bool {
        [.notFound, .invalidToken, .paymentMismatch, .orderNotOpen, .orderChanged, .paymentInProgress].contains(error.code)
    }

    /// Checks the token against the order and claims it: everything before the processor is asked.
    private func claimStep(_ attempt: Attempt, from start: ClaimableOrder) async throws(CoreError) -> ClaimStep {
        var claimable = start
        var order = claimable.order
        let checked = try check(attempt, against: order)
        let processor = processors.processor(forMerchant: order.merchantIdentifier)
        var expectedSends: Int?
        var resending: String?
        if order.state == .unknown {
            let earlier = try await storage { try await orderPayments.payments(orderId: order.id) }
            if let unknown = earlier.last(where: { $0.state == .unknown }) {
                guard unknown.processor == processor.name else {
                    logger.error(
                        "an unknown payment went through another processor than the merchant's: resolve it there first",
                        metadata: ["payment": "\(unknown.id)", "processor": "\(unknown.processor)"])
                    throw CoreError.unknownOutcome
                }
                // The processor is asked before the retry sends anything.
                switch try await gate(unknown, through: processor) {
                case .resend(let sends):
                    expectedSends = sends
                    resending = unknown.id
                case .settled(let settled):
                    // Authorized by the earlier send: the order is paid. Refused: it is open
                    // again, and this token makes a new attempt.
                    if settled.state != .refused { return .settled(settled) }
                    claimable = try await claimableOrder(attempt, remembered: false)
                    order = claimable.order
                }
            }
        }
        let now = time.now
        let draft = PaymentRecord(
            id: RecordIdentifier.random(), orderId: order.id, transactionId: checked.claimKey, state: .pending,
            amount: order.priced.total, currency: order.priced.currency, network: checked.network, lastFour: checked.lastFour,
            processor: processor.name, reference: "", merchantTokenIdentifier: checked.merchantToken?.merchantTokenIdentifier,
            merchantTokenMetadata: checked.merchantToken?.merchantTokenMetadata, createdAt: now, lastSentAt: now)
        let sealed: [UInt8]
        do {
            var retry = RetryRequest(cardholderName: attempt.cardholderName)
            switch attempt.wallet {
            case .applePay(let token): retry.token = token
            case .googlePay(let method, _): retry.googlePayToken = method.token
            }
            sealed = try vault.seal(retry, for: resending ?? draft.id)
        } catch {
            throw CoreError(.storage, "the payment could not be recorded; nothing was charged")
        }
        let claimed = try await claim(
            PaymentClaim(
                draft: draft, transactionId: checked.claimKey, sealedRequest: sealed,
                priceVersion: checked.priceVersion ?? order.priceVersion,
                expectedSends: expectedSends, resending: resending, basis: claimable.basis))
        let request = AuthorizationRequest(
            order: order, wallet: checked.wallet, reference: claimed.reference, cardholderName: attempt.cardholderName,
            storeCredential: order.priced.agreement.map { CredentialUsage($0.type) })
        return .send(claimed, request, processor)
    }

    /// The attempt's order. Whether it may be paid now is the claim's to say, after the replay check.
    private func claimableOrder(_ attempt: Attempt, remembered: Bool = true) async throws(CoreError) -> ClaimableOrder {
        guard RecordIdentifier.isLookup(attempt.orderId),
            let claimable = try await storage({ try await orderPayments.claimableOrder(id: attempt.orderId, remembered: remembered) }),
            claimable.order.merchantIdentifier == attempt.merchantIdentifier
        else { throw CoreError(.notFound, "there is no such order") }
        return claimable
    }

    /// Checks the attempt's token against the order, by its wallet's rules.
    private func check(_ attempt: Attempt, against order: OrderRecord) throws(CoreError) -> CheckedToken {
        switch attempt.wallet {
        case .applePay(let token): return try checkApplePay(token, against: order)
        case .googlePay(let method, let priceVersion): return try checkGooglePay(method, priceVersion: priceVersion, against: order)
        }
    }

    /// Verifies the token, decrypts it where Orchard holds its key, and checks it pays exactly
    /// this order. A token for a key the processor holds stays encrypted: its signature, key and
    /// binding are checked here, and the processor checks the amount it decrypts.
    private func checkApplePay(_ token: PaymentToken, against order: OrderRecord) throws(CoreError) -> CheckedToken {
        let verified: TokenVerifier.Verified
        let payment: DecryptedPayment?
        do throws(ApplePayError) {
            let now = time.now
            verified = try EngineMetrics.tokenStep("verify") { () throws(ApplePayError) in
                try verifier.verify(token.paymentData, at: now)
            }
            guard let decryptor = decryptor(forMerchant: order.merchantIdentifier) else {
                throw TokenDecryptor.unknownKey(verified.decoded.publicKeyHash, configured: [])
            }
            guard let key = decryptor.key(for: verified.decoded) else {
                throw TokenDecryptor.unknownKey(verified.decoded.publicKeyHash, configured: decryptor.keys.map(\.publicKeyHash))
            }
            if key.processorHeldScheme != nil {
                guard order.priced.agreement == nil else {
                    throw ApplePayError(
                        .keyHeldByProcessor, "a payment that sets up a mandate needs a processing key Orchard holds (see processingKeys)")
                }
                payment = nil
            } else {
                payment = try EngineMetrics.tokenStep("decrypt") { () throws(ApplePayError) in try decryptor.decrypt(verified.decoded) }
            }
        } catch {
            logger.warning(
                "payment token refused",
                metadata: ["order": "\(order.id)", "reason": "\(error.code.rawValue)", "detail": "\(error.message)"])
            throw CoreError(.invalidToken, "the payment could not be verified (\(error.code.rawValue))")
        }
        guard verified.decoded.applicationData == Array(SHA256.hash(data: order.applicationData)) else {
            throw CoreError(.paymentMismatch, "the payment was not made for this order (applicationData differs)")
        }
        let checked = CheckedToken(
            claimKey: Hex.encode(verified.decoded.transactionId), wallet: .applePay(token, decrypted: payment),
            network: token.paymentMethod?.checkedNetwork, lastFour: payment?.lastFour ?? token.paymentMethod?.lastFour ?? "",
            merchantToken: payment?.fields)
        guard let payment else { return checked }
        let currency = Currency(code: order.priced.currency)
        guard payment.fields.transactionAmount == order.priced.total, payment.fields.currencyCode == currency?.numericCode else {
            logger.warning(
                "payment does not match the order",
                metadata: [
                    "order": "\(order.id)", "expected": "\(order.priced.total) \(currency?.numericCode ?? "?")",
                    "got": "\(payment.fields.transactionAmount) \(payment.fields.currencyCode)",
                ])
            throw CoreError(.paymentMismatch, "the payment amount or currency does not match the order")
        }
        return checked
    }

    func claim(_ claim: PaymentClaim) async throws(CoreError) -> PaymentRecord {
        do {
            return try await orderPayments.claimPayment(claim)
        } catch let error as CoreError {
            switch error.code {
            case .replayedPayment: throw CoreError(.replayedPayment, "this payment was already submitted")
            case .orderNotOpen: throw CoreError(.orderNotOpen, "this order is already paid or closed")
            case .orderChanged:
                throw CoreError(
                    .orderChanged, "the order's price changed while it was being paid; nothing was charged, please pay again")
            case .paymentInProgress: throw CoreError.inProgress
            default: throw CoreError(.storage, "the payment could not be recorded; nothing was charged")
            }
        } catch {
            logger.error("the payment could not be recorded before sending", metadata: ["error": "\(error)"])
            throw CoreError.beforeSending(
                error, else: CoreError(.storage, "the payment could not be recorded; nothing was charged"))
        }
    }
}
