import ApplePay
import Foundation
import Synchronization

/// A Worldline Direct payment status the mock can answer with, and the `statusOutput` Worldline's
/// status reference pairs with it (`statusCategory`, the legacy `statusCode`, `isAuthorized`).
public enum MockWorldlineStatus: String, Sendable, CaseIterable {
    case created = "CREATED"
    /// The customer was sent to a 3-D Secure check or a third party.
    case redirected = "REDIRECTED"
    /// Waiting for the customer's payment.
    case pendingPayment = "PENDING_PAYMENT"
    /// Queued for an asynchronous authorization.
    case authorizationRequested = "AUTHORIZATION_REQUESTED"
    /// Held for the merchant's fraud review.
    case pendingFraudApproval = "PENDING_FRAUD_APPROVAL"
    /// Authorized, funds held (FINAL_AUTHORIZATION).
    case pendingCapture = "PENDING_CAPTURE"
    /// Authorized, its capture queued (a SALE).
    case captureRequested = "CAPTURE_REQUESTED"
    /// Authorized and captured (a SALE, or a captured authorization).
    case captured = "CAPTURED"
    case cancelled = "CANCELLED"
    case rejected = "REJECTED"

    /// `statusOutput` as Worldline sends it with this status.
    public var statusOutput: [String: Any] {
        let (category, code, authorized): (String, Int, Bool) =
            switch self {
            case .created: ("CREATED", 0, false)
            case .redirected: ("PENDING_PAYMENT", 46, false)
            case .pendingPayment: ("PENDING_PAYMENT", 41, false)
            case .authorizationRequested: ("PENDING_CONNECT_OR_3RD_PARTY", 51, false)
            case .pendingFraudApproval: ("PENDING_MERCHANT", 55, false)
            case .pendingCapture: ("PENDING_MERCHANT", 5, true)
            case .captureRequested: ("PENDING_CONNECT_OR_3RD_PARTY", 91, true)
            case .captured: ("COMPLETED", 9, true)
            case .cancelled: ("UNSUCCESSFUL", 1, false)
            case .rejected: ("UNSUCCESSFUL", 2, false)
            }
        return [
            "statusCategory": category, "statusCode": code, "isAuthorized": authorized, "isCancellable": authorized,
            "isRefundable": self == .captured,
        ]
    }

    /// What the mock counts the payment as: held funds, nothing held, or no outcome yet.
    public var chargeState: MockCharge.State {
        switch self {
        case .pendingCapture, .captureRequested, .captured: .authorized
        case .cancelled, .rejected: .refused
        default: .pending
        }
    }
}

/// Worldline payment statuses in ``MockProcessors``: what CreatePayment answered, GetPayment
/// (`GET /v2/{merchantId}/payments/{paymentId}`) answers until a test moves it on.
extension MockProcessors {
    /// Moves a Worldline payment to `status`, as Worldline would once the customer, the acquirer
    /// or the merchant acted: GetPayment answers it from then on.
    public func setWorldlineStatus(_ status: MockWorldlineStatus, ofPayment id: String) {
        guard let worldline = processor(MockWorldline.self) else { return }
        state.withLock { state in
            worldline.statuses.withLock { $0[id] = status }
            guard let index = state.charges.firstIndex(where: { $0.processor == worldline.name && $0.id == id }) else { return }
            state.charges[index].state = status.chargeState
        }
    }

    /// Moves a refund to a Worldline refund status (`REFUNDED`, `REJECTED`…): GetRefunds shows it from then on.
    public func setWorldlineRefundStatus(_ status: String, ofRefund id: String) {
        state.withLock { state in
            guard let index = state.refunds.firstIndex(where: { $0.id == id }) else { return }
            state.refunds[index].status = status
        }
    }
}

extension MockWorldline {
    /// The status GetPayment answers for a Worldline payment.
    func worldlineStatus(of charge: MockCharge, in state: State) -> MockWorldlineStatus {
        switch charge.state {
        case .settled: .captured
        case .cancelled: .cancelled
        default: statuses.withLock { $0[charge.id] } ?? (charge.state == .refused ? .rejected : .pendingCapture)
        }
    }

    /// The `payment` of an answer: its status, `statusOutput` and references; `output` adds to its `paymentOutput`.
    static func worldlinePayment(id: String, status: MockWorldlineStatus, reference: String, output: [String: Any] = [:])
        -> [String: Any]
    {
        var paymentOutput: [String: Any] = ["references": ["merchantReference": reference]]
        paymentOutput.merge(output) { $1 }
        return ["id": id, "status": status.rawValue, "paymentOutput": paymentOutput, "statusOutput": status.statusOutput]
    }

    /// The status a new payment is answered with: the one asked for, or what the mode makes of an authorization.
    static func worldlineStatus(behaviour: MockProcessorBehaviour, mode: String) -> MockWorldlineStatus {
        if case .worldlineStatus(let status) = behaviour { return status }
        return mode == "SALE" ? .captured : .pendingCapture
    }

    /// CreatePayment's answer for `status`: 201 with the payment, or Worldline's 402 for a rejection.
    static func worldlineCreated(id: String, status: MockWorldlineStatus, reference: String, extra: [String: Any] = [:]) -> (
        Int, [UInt8]
    ) {
        let payment = worldlinePayment(id: id, status: status, reference: reference)
        guard status != .rejected else { return (402, worldlineRejection(id: id, code: "30511001", description: "REJECTED")) }
        var answer = extra
        answer["payment"] = payment
        return (201, body(answer))
    }

    /// `GET /v2/{merchantId}/payments/{paymentId}` and `…/refunds`, signed; nil for another request.
    func worldlineQueryRoute(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply? {
        let prefix = "/v2/\(account.merchantId)/payments/"
        guard request.method == "GET", request.path.hasPrefix(prefix) else { return nil }
        guard worldlineSignatureValid(request), worldlineDateFresh(request) else {
            return worldlineError(401, "AUTHORIZATION_FAILED", "the request signature or its Date header is invalid")
        }
        if let refusal = worldlineKeyRefusal(request) { return refusal }
        let rest = request.path.dropFirst(prefix.count).split(separator: "/")
        let unknown = Self.reply(
            404, ["errorId": UUID().uuidString, "errors": [["id": "UNKNOWN_PAYMENT_ID", "message": "no such payment"]]])
        return mock.state.withLock { state in
            guard let id = rest.first.map(String.init),
                let charge = state.charges.first(where: { $0.processor == name && $0.id == id })
            else { return unknown }
            switch rest.count {
            case 1:
                return Self.reply(
                    200, Self.worldlinePayment(id: id, status: worldlineStatus(of: charge, in: state), reference: charge.reference))
            case 2 where rest[1] == "refunds":
                let refunds = state.refunds.filter { $0.processor == name && $0.paymentReference == charge.reference }
                return Self.reply(200, ["refunds": refunds.map(Self.worldlineRefund)])
            default:
                return worldlineError(404, "NOT_FOUND", "no such resource")
            }
        }
    }

    /// A refund as Worldline's answers and GetRefunds show it.
    static func worldlineRefund(_ refund: MockRefund) -> [String: Any] {
        var output: [String: Any] = ["amountOfMoney": ["amount": refund.amount, "currencyCode": refund.currency]]
        if let reference = refund.merchantReference { output["references"] = ["merchantReference": reference] }
        let (category, code): (String, Int) =
            switch refund.status {
            case "REFUNDED": ("REFUNDED", 8)
            case "REFUND_REQUESTED": ("PENDING_CONNECT_OR_3RD_PARTY", 81)
            case "REJECTED", "CANCELLED": ("UNSUCCESSFUL", 83)
            case "PENDING_APPROVAL": ("PENDING_MERCHANT", 81)
            default: ("CREATED", 0)
            }
        return [
            "id": refund.id, "status": refund.status, "statusOutput": ["statusCategory": category, "statusCode": code],
            "refundOutput": output,
        ]
    }

}
