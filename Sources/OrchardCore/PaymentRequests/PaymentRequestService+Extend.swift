import ApplePay
import Foundation

/// What the shop sends to keep a request payable for longer (`POST /v1/payment-requests/{id}/extend`).
public struct PaymentRequestExtension: Codable, Sendable, Equatable {
    /// Seconds from now, within ``PaymentRequestService/expiryRange``, as at creation.
    public var expiresInSeconds: Int

    public init(expiresInSeconds: Int) { self.expiresInSeconds = expiresInSeconds }
}

extension PaymentRequestService {
    /// Keeps an unpaid request payable until `expiresInSeconds` from now: a platform whose
    /// customer was given more time (pretix's organizers extend payment terms) keeps the request
    /// it handed out. It never shortens one: a request already open for longer is answered as it
    /// is, so a retry is harmless. A request being paid may be extended (a refused payment leaves
    /// it open); a paid, cancelled or expired one is refused with `orderNotOpen`, unchanged.
    public func extend(id: String, _ change: PaymentRequestExtension, merchant: MerchantConfiguration) async throws
        -> PaymentRequestView
    {
        guard Self.expiryRange.contains(change.expiresInSeconds) else {
            throw CoreError(
                .invalidRequest, "expiresInSeconds must be \(Self.expiryRange.lowerBound)–\(Self.expiryRange.upperBound)")
        }
        let record = try await request(id: id, merchant: merchant)
        let now = time.now
        let until = now.addingTimeInterval(TimeInterval(change.expiresInSeconds))
        if try await paymentRequests.extendPaymentRequest(id: record.id, until: until, at: now) {
            return try await view(try await request(id: id, merchant: merchant), merchant: merchant)
        }
        guard let order = try await orderPayments.order(id: record.id) else {
            throw CoreError(.inconsistent, "the payment request's order is missing")
        }
        switch order.state {
        case .open, .pending, .unknown:
            guard let expiry = order.expiresAt, expiry > now else {
                throw CoreError(.orderNotOpen, "this payment request has expired; create a new one")
            }
            // Open at least that long already (or extended meanwhile): answered as it is.
            return try await view(record, merchant: merchant)
        case .paid: throw CoreError(.orderNotOpen, "this payment request is paid; there is nothing to extend")
        case .cancelled: throw CoreError(.orderNotOpen, "this payment request was cancelled; create a new one")
        case .expired: throw CoreError(.orderNotOpen, "this payment request has expired; create a new one")
        }
    }
}
