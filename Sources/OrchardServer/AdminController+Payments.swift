import ApplePay
import Foundation
import Hummingbird
import Logging

/// The back office: `/admin/payments`, to list payments (the unknown ones to reconcile first)
/// and to settle or cancel authorized ones through the processor that authorized them.
extension AdminController {
    struct PaymentView: Encodable {
        var payment: PaymentRecord
        var merchantIdentifier: String?
        var orderState: OrderRecord.State?
    }

    func addPaymentRoutes(to admin: RouterGroup<some RequestContext>) {
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
            let limit = query["limit"].flatMap { Int(String($0)) } ?? 100
            guard (1...1000).contains(limit) else { throw OrchardError(.invalidRequest, "limit must be 1–1000") }
            var payments: [PaymentRecord]
            if let orderId = query["order"].map(String.init) {
                payments = try await store.payments(orderId: orderId).filter { state == nil || $0.state == state }
            } else {
                payments = try await store.payments(state: state, limit: limit)
            }
            payments = Array(payments.prefix(limit))
            return try json(["payments": payments], status: .ok)
        }
        admin.get("payments/{id}") { _, context in
            let payment = try await requirePayment(try context.parameters.require("id"))
            let order = try await store.order(id: payment.orderId)
            return try json(
                PaymentView(payment: payment, merchantIdentifier: order?.merchantIdentifier, orderState: order?.state), status: .ok)
        }
        admin.post("payments/{id}/settle") { _, context in
            try await act(.settled, on: try context.parameters.require("id"), logger: context.logger)
        }
        admin.post("payments/{id}/cancel") { _, context in
            try await act(.cancelled, on: try context.parameters.require("id"), logger: context.logger)
        }
        admin.post("payments/{id}/resolve") { request, context in
            try await resolve(request, id: try context.parameters.require("id"), logger: context.logger)
        }
    }

    struct ResolveBody: Decodable {
        /// What the processor's own records say: `authorized` or `refused`.
        var state: PaymentState
    }

    /// Records the outcome of an `unknown` payment after checking it with the processor:
    /// authorized marks the order paid, refused reopens it.
    func resolve(_ request: Request, id: String, logger: Logger) async throws -> Response {
        let body: ResolveBody = try await decode(request)
        guard body.state == .authorized || body.state == .refused else {
            throw OrchardError(.invalidRequest, "state must be authorized or refused, as the processor's records say")
        }
        var payment = try await requirePayment(id)
        guard payment.state == .unknown else {
            throw OrchardError(.invalidState, "only an unknown payment can be resolved; this one is \(payment.state.rawValue)")
        }
        payment.state = body.state
        payment.updatedAt = time.now
        try await store.finishPayment(payment, orderState: body.state == .authorized ? .paid : .open)
        logger.notice("unknown payment resolved by an operator", metadata: ["payment": "\(id)", "state": "\(body.state.rawValue)"])
        return try json(try await requirePayment(id), status: .ok)
    }

    func requirePayment(_ id: String) async throws -> PaymentRecord {
        guard id.utf8.count <= 64, let payment = try await store.payment(id: id) else {
            throw OrchardError(.notFound, "there is no payment \(id)")
        }
        return payment
    }

    /// Settles or cancels an authorized payment: the processor first, then the record.
    func act(_ target: PaymentState, on id: String, logger: Logger) async throws -> Response {
        let payment = try await requirePayment(id)
        guard payment.state == .authorized else {
            throw OrchardError(.invalidState, "only an authorized payment can be \(target.rawValue); this one is \(payment.state.rawValue)")
        }
        guard let order = try await store.order(id: payment.orderId) else {
            throw OrchardError(.notFound, "the payment's order is missing")
        }
        let processor = processors.processor(forMerchant: order.merchantIdentifier)
        guard processor.name == payment.processor else {
            throw OrchardError(
                .invalidState,
                "this payment went through \(payment.processor), which is no longer the merchant's processor; act on it there")
        }
        do {
            if target == .settled {
                try await processor.settle(payment)
            } else {
                try await processor.cancel(payment)
            }
        } catch {
            logger.error(
                "processor refused a back-office action", metadata: ["payment": "\(id)", "action": "\(target)", "error": "\(error)"])
            throw OrchardError(.processorRejected, "\(payment.processor) did not accept the request: \(error.description)")
        }
        guard try await store.transitionPayment(id: id, from: [.authorized], to: target, at: time.now) else {
            throw OrchardError(.invalidState, "the payment changed meanwhile; reload it")
        }
        logger.info("payment \(target.rawValue)", metadata: ["payment": "\(id)", "processor": "\(payment.processor)"])
        return try json(try await requirePayment(id), status: .ok)
    }
}
