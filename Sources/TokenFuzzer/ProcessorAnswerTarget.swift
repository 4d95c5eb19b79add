import Foundation
import OrchardCore
import ProcessorClients

/// A processor's answer read into an outcome, as the clients read it, without the network.
/// Byte 0 picks the reading (its low 3 bits) and a flag (bit 3: a payment that stores a
/// credential, or a refund's second send); byte 1 picks the HTTP status; the rest is the body.
///
/// Besides never trapping, the readings must keep the rules the payments engine counts on: a
/// 2xx authorization answer is never `failed` (only a refused request is; an answer we cannot
/// read is no answer), and a re-sent Worldpay refund's 4xx is never a refusal.
enum ProcessorAnswerTarget {
    static let statuses = [200, 201, 202, 204, 400, 401, 402, 403, 404, 409, 415, 422, 500, 502, 503, 504, 302, 0, 199, 600]
    static let reference = "ord_0123456789abcdef0123456789"
    static let worldpayURL = "https://try.access.worldpay.com"
    static let worldlineURL = "https://payment.preprod.direct.worldline-solutions.com/v2/PSPID/payments"

    static func run(_ bytes: [UInt8]) {
        guard bytes.count >= 2 else { return }
        let flag = bytes[0] & 0x08 != 0
        let status = statuses[Int(bytes[1]) % statuses.count]
        let body = Array(bytes.dropFirst(2))
        switch bytes[0] & 0x07 {
        case 0:
            let outcome = try? WorldpayProcessor.authorizationOutcome(
                status: status, body: body, reference: reference, baseURL: worldpayURL, storesCredential: flag)
            check(outcome, status: status)
        case 1:
            let outcome = try? WorldlineProcessor.authorizationOutcome(
                status: status, body: body, reference: reference, paymentsURL: worldlineURL, storesCredential: flag)
            check(outcome, status: status)
        case 2:
            let outcome = try? WorldpayProcessor.refundOutcome(status: status, body: body, sends: flag ? 2 : 1)
            if flag && (400..<500).contains(status) {
                precondition(outcome == nil, "a re-sent Worldpay refund's \(status) read as \(String(describing: outcome))")
            }
        case 3:
            _ = try? WorldlineProcessor.refundOutcome(status: status, body: body, reference: reference, sends: flag ? 2 : 1)
        case 4:
            _ = try? WorldpayProcessor.paymentEventsLookup(status: status, body: body, reference: reference, baseURL: worldpayURL)
        case 5:
            _ = try? WorldpayProcessor.refundLookup(status: status, body: body, paymentId: "pay1", refundReference: reference)
        case 6:
            _ = try? WorldlineProcessor.paymentLookup(
                status: status, body: body, id: "3000000000_0", reference: reference, paymentsURL: worldlineURL)
        default:
            _ = try? WorldlineProcessor.refundLookup(
                status: status, body: body, id: "3000000000_0", reference: reference, processorReference: flag ? "r1" : nil)
        }
    }

    /// A 2xx answer may authorize, refuse or leave the payment pending, or be no answer; a
    /// `failed` (the request refused, nothing charged, safe to give up) must come from a 4xx.
    static func check(_ outcome: AuthorizationOutcome?, status: Int) {
        guard let outcome, outcome.status == .failed else { return }
        precondition(
            [400, 401, 403, 404, 415].contains(status), "HTTP \(status) read as failed: \(outcome.code ?? "")")
    }
}
