import ApplePay
import Crypto
import Foundation
import Hummingbird
import Logging
import OrchardCore

/// `/v1/mandates`: the mandates a merchant's agreements set up, merchant-initiated charges of
/// them, and ending them. Another merchant's mandate is "not found".
struct MandatesController {
    let store: any MandateRecords & PaymentRequests & OrderPayments
    let engine: PaymentsEngine
    let lifecycle: MandateLifecycle
    let time: TimeSource

    /// The charge body; re-encoded with sorted keys (and the mandate), it is the idempotency fingerprint.
    struct ChargeBody: Codable {
        /// Minor units of the mandate's currency.
        var amount: Int64
        /// The shop's own reference for this charge (its invoice number).
        var reference: String
        var metadata: [String: String]?
        /// For a recurring or deferred mandate: charge above the agreement's amount, saying why.
        var allowAmountAbove: AmountAbove?

        struct AmountAbove: Codable {
            var reason: String
        }
    }

    struct MandateList: ResponseEncodable {
        var mandates: [MandateView]
    }

    struct ChargeView: ResponseEncodable {
        var payment: PaymentView
        var mandate: MandateView
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("mandates") { request, context in
            let merchant = try context.requireAPIMerchant()
            let state = try request.uri.queryParameters["state"].map { text in
                guard let state = MandateRecord.State(rawValue: String(text)) else {
                    throw OrchardError(.invalidRequest, "state must be active or ended")
                }
                return state
            }
            let mandates = try await store.mandates(merchantIdentifier: merchant.merchantIdentifier, state: state, limit: 100)
            return MandateList(mandates: mandates.map(MandateView.init))
        }
        v1.get("mandates/{id}") { _, context in
            MandateView(try await requireMandate(context))
        }
        v1.postJSON("mandates/{id}/charges") { request, context in try await charge(request, context: context) }
        v1.delete("mandates/{id}") { _, context in
            let mandate = try await requireMandate(context)
            guard mandate.state == .active,
                let ended = try await lifecycle.end(mandate, reason: "shop", unlinkAtApple: true)
            else { return MandateView(try await store.mandate(id: mandate.id) ?? mandate) }
            return MandateView(ended)
        }
        return v1
    }

    func requireMandate(_ context: OrchardRequestContext) async throws -> MandateRecord {
        let merchant = try context.requireAPIMerchant()
        let id = try context.parameters.require("id")
        guard id.utf8.count <= 64, let mandate = try await store.mandate(id: id), mandate.merchantIdentifier == merchant.merchantIdentifier
        else { throw OrchardError(.notFound, "there is no mandate \(id.prefix(64))") }
        return mandate
    }

    /// A charge is a payment request of its own (the Idempotency-Key's), paid by the mandate: a
    /// retry with the same key finds it and re-sends an unknown attempt under the same reference.
    func charge(_ request: Request, context: OrchardRequestContext) async throws -> EditedResponse<ChargeView> {
        let merchant = try context.requireAPIMerchant()
        let key = try idempotencyKey(request)
        let body = try await request.decode(as: ChargeBody.self, context: context)
        let mandate = try await requireMandate(context)
        guard Money.isPositiveAmount(body.amount) else {
            throw OrchardError(.invalidRequest, "amount must be a whole number of minor units from 1 to \(ShopCart.maximumAmount)")
        }
        let (_, metadata) = try ShopInput.checkedReference(
            body.reference, metadata: body.metadata, naming: "the shop's own reference for this charge")
        // Checked before a charge order is made, so an ended mandate leaves nothing behind.
        guard mandate.state == .active else {
            throw OrchardError(.invalidState, "the mandate has ended (\(mandate.endedReason ?? "ended")): it cannot be charged")
        }
        try await checkBound(body, of: mandate, context: context)
        let now = time.now
        let id = RecordIdentifier.random()
        let cart = ShopCart(currency: mandate.currency, countryCode: "ZZ", amount: body.amount)
        let order = OrderRecord(
            id: id, merchantIdentifier: merchant.merchantIdentifier, state: .open, priced: try price(cart),
            applicationData: Array("orchard-charge:\(id)".utf8), createdAt: now, expiresAt: now.addingTimeInterval(86_400))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let fingerprint = SHA256.hash(data: try encoder.encode(body) + Data(mandate.id.utf8))
        let record = PaymentRequestRecord(
            id: id, merchantIdentifier: merchant.merchantIdentifier, reference: body.reference, metadata: metadata, cart: cart,
            idempotencyKey: "mandate-charge:" + key, fingerprint: Array(fingerprint), expiresAt: now.addingTimeInterval(86_400),
            createdAt: now)
        let stored: PaymentRequestRecord
        let created: Bool
        do {
            (stored, created) = try await store.createPaymentRequest(record, order: order)
        } catch let error as BusinessRefusal where error.code == .idempotencyMismatch {
            throw OrchardError(.idempotencyMismatch, "this Idempotency-Key was used for another charge or body")
        }
        let payment: PaymentRecord
        do {
            payment = try await engine.charge(mandate, orderId: stored.id)
        } catch {
            throw OrchardError(error)
        }
        switch payment.state {
        case .refused: throw OrchardError(.paymentFailed, "the issuer declined the charge: nothing was charged")
        case .failed: throw OrchardError(.processorRejected, "the processor refused the charge request: nothing was charged")
        default:
            let current = try await store.mandate(id: mandate.id) ?? mandate
            return EditedResponse(
                status: created ? .created : .ok,
                response: ChargeView(payment: PaymentView(payment: payment, request: stored, refunded: 0), mandate: MandateView(current)))
        }
    }

    /// The agreement the shopper accepted bounds the charge (``MandateChargeBound``).
    private func checkBound(_ body: ChargeBody, of mandate: MandateRecord, context: OrchardRequestContext) async throws {
        guard let agreement = try await store.order(id: mandate.orderId)?.priced.agreement else {
            throw OrchardError(.internalError, "the order that set up this mandate is missing: it cannot be charged")
        }
        do throws(MandateChargeBound.Refusal) {
            try MandateChargeBound.check(amount: body.amount, agreement: agreement, reasonAbove: body.allowAmountAbove?.reason)
        } catch {
            throw OrchardError(.invalidRequest, error.message)
        }
        if let reason = body.allowAmountAbove?.reason {
            context.logger.notice(
                "a mandate is charged above its agreement's amount, as the shop asked",
                metadata: ["mandate": "\(mandate.id)", "amount": "\(body.amount)", "reason": "\(reason)"])
        }
    }

    private func price(_ cart: ShopCart) throws -> PricedOrder {
        do throws(ApplePayError) {
            return try cart.price()
        } catch {
            throw OrchardError(.invalidRequest, error.message)
        }
    }
}

extension MandateView: ResponseEncodable {}
