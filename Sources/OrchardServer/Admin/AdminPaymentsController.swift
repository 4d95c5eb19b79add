import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// The back office: `/admin/payments`, to list payments (the unknown ones to reconcile first)
/// and to settle or cancel authorized ones through the processor that authorized them.
struct AdminPaymentsController {
    let store: any OrderPayments
    let engine: PaymentsEngine

    struct PaymentList: ResponseEncodable {
        var payments: [PaymentRecord]
    }

    struct PaymentView: ResponseEncodable {
        var payment: PaymentRecord
        var merchantIdentifier: String?
        var orderState: OrderRecord.State?
    }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("payments") { request, _ in
            let query = request.uri.queryParameters
            var state: PaymentState?
            if let raw = query["state"] {
                guard let parsed = PaymentState(rawValue: String(raw)) else {
                    throw OrchardError(
                        .invalidRequest, "state must be one of \(PaymentState.allCases.map(\.rawValue).joined(separator: ", "))")
                }
                state = parsed
            }
            let limit = try query.adminLimit(default: 100)
            var payments: [PaymentRecord]
            if let orderId = query["order"].map(String.init) {
                payments = try await store.payments(orderId: orderId).filter { state == nil || $0.state == state }
            } else {
                payments = try await store.payments(state: state, limit: limit)
            }
            payments = Array(payments.prefix(limit))
            return PaymentList(payments: payments)
        }
        admin.get("payments/{id}") { _, context in
            let payment = try await requirePayment(try context.parameters.require("id"))
            let order = try await store.order(id: payment.orderId)
            return PaymentView(payment: payment, merchantIdentifier: order?.merchantIdentifier, orderState: order?.state)
        }
        admin.post("payments/{id}/settle") { _, context in
            try await engine.settle(paymentId: try context.parameters.require("id"))
        }
        admin.post("payments/{id}/cancel") { _, context in
            try await engine.cancel(paymentId: try context.parameters.require("id"))
        }
        admin.postJSON("payments/{id}/resolve") { request, context in
            let body = try await request.decode(as: ResolveBody.self, context: context)
            guard let resolution = PaymentsEngine.Resolution(rawValue: body.state) else {
                throw OrchardError(.invalidRequest, "state must be authorized or refused, as the processor's records say")
            }
            let id = try context.parameters.require("id")
            return try await engine.resolve(paymentId: id, as: resolution)
        }
        return admin
    }

    struct ResolveBody: Decodable {
        /// What the processor's own records say: `authorized` or `refused`.
        var state: String
    }

    func requirePayment(_ id: String) async throws -> PaymentRecord {
        guard RecordIdentifier.isLookup(id), let payment = try await store.payment(id: id) else {
            throw OrchardError(.notFound, "there is no payment \(id)")
        }
        return payment
    }
}
