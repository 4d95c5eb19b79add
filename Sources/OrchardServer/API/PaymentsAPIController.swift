import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `/v1/payments/{id}`: read a payment, capture or cancel it, refund it, through the processor
/// that authorized it. Another merchant's payment is "not found".
struct PaymentsAPIController {
    let refunds: any Refunds
    let paymentRequests: any PaymentRequests
    let engine: PaymentsEngine
    let walletOrders: WalletOrderService?

    struct RefundBody: Decodable {
        /// Minor units; absent: everything not refunded yet.
        var amount: Int64?
    }

    /// `POST …/capture`'s optional body.
    struct CaptureBody: Decodable {
        /// Minor units, 1 to the authorized amount; absent: the whole amount.
        var amount: Int64?
    }

    struct Detail: ResponseEncodable {
        var payment: PaymentView
        var refunds: [RefundRecord]
        /// Only in an authorization's answer, for PassKit's `PKPaymentOrderDetails`.
        var orderDetails: WalletOrderDetails?
    }

    struct RefundList: ResponseEncodable {
        var refunds: [RefundRecord]
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("payments/{id}") { _, context in
            try await detail(try engine(context) { try await $0.requirePayment($1, merchantIdentifier: $2) })
        }
        v1.post("payments/{id}/capture") { request, context in
            let amount = try await captureAmount(request, context)
            return try await detail(try engine(context) { try await $0.settle(paymentId: $1, merchantIdentifier: $2, amount: amount) })
        }
        v1.post("payments/{id}/cancel") { _, context in
            try await detail(try engine(context) { try await $0.cancel(paymentId: $1, merchantIdentifier: $2) })
        }
        v1.get("payments/{id}/refunds") { _, context in
            let payment = try await engine(context) { try await $0.requirePayment($1, merchantIdentifier: $2) }
            return RefundList(refunds: try await self.refunds.refunds(paymentId: payment.id))
        }
        v1.postJSON("payments/{id}/refunds") { request, context in
            let key = try idempotencyKey(request)
            let body = try await request.decode(as: RefundBody.self, context: context)
            let refund = try await engine(context) {
                try await $0.refund(paymentId: $1, merchantIdentifier: $2, amount: body.amount, idempotencyKey: key)
            }
            let status: HTTPResponse.Status =
                switch refund.state {
                case .refunded: .created
                case .refused: HTTPResponse.Status(code: 402, reasonPhrase: "Payment Required")
                case .pending, .unknown: .accepted
                }
            return EditedResponse(status: status, response: refund)
        }
        return v1
    }

    /// The capture's amount: nil without a body (the whole amount, as before the body existed);
    /// a body is JSON only (415 otherwise), `{"amount": minor units}`.
    func captureAmount(_ request: Request, _ context: OrchardRequestContext) async throws -> Int64? {
        let bytes = try await readBody(request, limit: context.maxBodyBytes)
        guard !bytes.isEmpty else { return nil }
        guard JSONContentTypeMiddleware<OrchardRequestContext>.isJSON(request.headers[.contentType]) else {
            throw OrchardError(
                .unsupportedMediaType,
                "send the body as JSON with the header Content-Type: application/json, or no body for the whole amount")
        }
        do {
            return try JSONDecoder().decode(CaptureBody.self, from: Data(bytes)).amount
        } catch {
            throw OrchardError(.invalidJSON, "the body is not {\"amount\": minor units} (\(DecodingErrorText.describe(error)))")
        }
    }

    /// Runs an engine call for the authenticated merchant on the path's payment.
    func engine<T>(
        _ context: OrchardRequestContext, _ body: (PaymentsEngine, String, String) async throws -> T
    ) async throws -> T {
        let merchant = try context.requireAPIMerchant()
        return try await body(engine, try context.parameters.require("id"), merchant.merchantIdentifier)
    }

    func detail(_ payment: PaymentRecord) async throws -> Detail {
        let refunds = try await self.refunds.refunds(paymentId: payment.id)
        let request = try await paymentRequests.paymentRequest(id: payment.orderId)
        let refunded = refunds.filter { $0.state == .refunded }.reduce(0) { $0 + $1.amount }
        return Detail(payment: PaymentView(payment: payment, request: request, refunded: refunded), refunds: refunds)
    }
}

extension RefundRecord: ResponseEncodable {}
