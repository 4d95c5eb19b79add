import Foundation

/// Payment requests (a shop's cart, priced by Orchard, and its idempotency fingerprint) and
/// the expiry of open orders. A payment request and its open order are created in one
/// transaction, so creating one is this repository's unit of work although it inserts an
/// order of ``OrderPayments``; expiring orders writes their `payment_request.expired` events.
public protocol PaymentRequests: Sendable {
    /// Inserts the request and its open order in one transaction, unless the merchant already
    /// used its idempotency key: then the earlier request comes back (`created` false) when the
    /// fingerprints match, and ``CoreError/Code/idempotencyMismatch`` otherwise.
    func createPaymentRequest(_ request: PaymentRequestRecord, order: OrderRecord) async throws -> (
        record: PaymentRequestRecord, created: Bool
    )
    func paymentRequest(id: String) async throws -> PaymentRequestRecord?
    /// Moves open orders whose expiry has passed to `expired`, each payment request's with its
    /// `payment_request.expired` event (a checkout-page order, which has no payment request,
    /// expires without one); returns their IDs.
    func expireOrders(at date: Date, limit: Int) async throws -> [String]
    /// Moves the payment request's order from `open` to `cancelled` with its
    /// `payment_request.cancelled` event, in one transaction (a compare-and-set: an order being
    /// paid, paid or closed is left as it is); false when the order was not open.
    func cancelOpenPaymentRequest(id: String, at date: Date) async throws -> Bool
    /// Moves the expiry of the request and of its order to `until`, in one transaction, if the
    /// order is still open or being paid (`open`, `pending`, `unknown`), its expiry is after `date`
    /// and before `until` (a compare-and-set: it never shortens one, nor revives an expired one);
    /// false otherwise, changing nothing.
    func extendPaymentRequest(id: String, until: Date, at date: Date) async throws -> Bool
}
