import Foundation
import OrchardCore

/// Worldline Direct's status model, read as its status reference defines it
/// (docs.direct.worldline-solutions.com, "Statuses", and "Authorisation and direct sale"): every
/// payment and refund carries `status`, and `statusOutput` with `statusCategory`, `statusCode`
/// (the legacy numeric status) and, for payments, `isAuthorized`.
///
/// The categories group the statuses (as Worldline's SDKs list them): `CREATED`;
/// `PENDING_PAYMENT` (`PENDING_PAYMENT`, `REDIRECTED`: waiting for the customer);
/// `PENDING_MERCHANT` (`PENDING_CAPTURE`, `PENDING_APPROVAL`, `PENDING_COMPLETION`,
/// `PENDING_FRAUD_APPROVAL`); `PENDING_CONNECT_OR_3RD_PARTY` (`AUTHORIZATION_REQUESTED`,
/// `CAPTURE_REQUESTED`, `REFUND_REQUESTED`: queued for the acquirer); `COMPLETED` (`CAPTURED`,
/// `PAID`); `UNSUCCESSFUL` (`CANCELLED`, `REJECTED`, `REJECTED_CAPTURE`: "will never become
/// successful"); `REVERSED`; `REFUNDED`; `ACCOUNT_VERIFIED`. A successful authorization
/// (`FINAL_AUTHORIZATION`) is `PENDING_CAPTURE` / `PENDING_MERCHANT` / 5; a direct sale (`SALE`)
/// is statusCode 9 once captured, `CAPTURE_REQUESTED` (91, "payment processing") while its
/// capture is queued. Status codes in the legacy table: 5 authorised, 9 payment requested (captured),
/// 91 payment processing; 8 refunded, 81 refund pending, 85 refund processed by merchant; 46
/// waiting authentication, 51 authorisation waiting, 52 and 92 uncertain; 1 cancelled by the
/// customer, 2 authorisation declined, 83 refund refused.
///
/// Only what holds funds is authorized; a status whose fields disagree is not read as an outcome.
enum WorldlineStatus {
    /// What a payment or refund status means for Orchard.
    enum Reading: Equatable {
        /// A payment: an authorization that holds funds (or a sale). A refund: taken for payout.
        case succeeded
        /// Rejected or cancelled: nothing held, nothing refunded.
        case refused
        /// Not final: waiting for the customer, the merchant's approval or the acquirer.
        case pending
        /// No status, an unknown one, or fields that disagree.
        case unreadable
    }

    static let pendingCategories: Set = ["CREATED", "PENDING_PAYMENT", "PENDING_MERCHANT", "PENDING_CONNECT_OR_3RD_PARTY"]

    /// A payment (CreatePayment's `payment`, GetPayment's answer).
    static func payment(_ payment: JSONValue?) -> Reading {
        guard let status = payment?["status"]?.string, let output = payment?["statusOutput"], output.object != nil,
            let category = output["statusCategory"]?.string
        else { return .unreadable }
        let authorized = output["isAuthorized"]?.bool == true
        let code = integer(output["statusCode"])
        /// The status, its category and (when present) its code, as Worldline pairs them.
        func holds(_ statuses: Set<String>, in categories: Set<String>, codes: Set<Int64>) -> Bool {
            statuses.contains(status) && categories.contains(category) && (code.map(codes.contains) ?? true)
        }
        if authorized {
            // FINAL_AUTHORIZATION (5), or a SALE as the reference names it (9); a SALE whose capture
            // is queued (91) or done (9).
            if holds(["PENDING_CAPTURE"], in: ["PENDING_MERCHANT"], codes: [5, 9])
                || holds(["CAPTURE_REQUESTED"], in: ["PENDING_CONNECT_OR_3RD_PARTY"], codes: [9, 91])
                || holds(["CAPTURED", "PAID"], in: ["COMPLETED"], codes: [9])
            {
                return .succeeded
            }
        } else if category == "UNSUCCESSFUL", code.map({ ![5, 9, 91].contains($0) }) ?? true {
            return .refused
        }
        return pendingCategories.contains(category) ? .pending : .unreadable
    }

    /// A refund (RefundPayment's answer or `refundResult`, an entry of GetRefunds). Worldline's
    /// `REFUND_REQUESTED` has taken the refund for its acquirer: refunded, as Orchard counts it
    /// (the payout follows), as Worldpay's accepted refund is.
    static func refund(_ refund: JSONValue?) -> Reading {
        guard let status = refund?["status"]?.string else { return .unreadable }
        let output = refund?["statusOutput"]
        let category = output?["statusCategory"]?.string
        let code = integer(output?["statusCode"])
        switch status {
        case "REFUND_REQUESTED" where (category ?? "PENDING_CONNECT_OR_3RD_PARTY") == "PENDING_CONNECT_OR_3RD_PARTY",
            "REFUNDED" where (category ?? "REFUNDED") == "REFUNDED":
            return code.map { [8, 81, 85].contains($0) } ?? true ? .succeeded : .unreadable
        case "REJECTED", "CANCELLED":
            return (category ?? "UNSUCCESSFUL") == "UNSUCCESSFUL" ? .refused : .unreadable
        default:
            return category.map(pendingCategories.contains) == true ? .pending : .unreadable
        }
    }

    /// A JSON integer, not a boolean or a fraction, and below 10^15 in magnitude (a status code
    /// is a few digits; `magnitude` rather than `abs`, which traps on `Int64.min`).
    static func integer(_ value: JSONValue?) -> Int64? {
        guard let integer = value?.int64, integer.magnitude < 1_000_000_000_000_000 else { return nil }
        return integer
    }
}
