import ApplePay
import Foundation

/// An order as stored: the server's priced order and what binds a token to it.
public struct OrderRecord: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// Can be repriced and paid.
        case open
        /// A payment attempt is with the processor right now; the order cannot change.
        case pending
        /// Exactly one payment is authorized (or settled).
        case paid
        /// The processor did not say whether it charged: a retry reuses the same idempotency reference.
        case unknown
        /// Its payment was cancelled (voided) after authorization: closed for good.
        case cancelled
        /// Open past its expiry: closed for good, nothing was paid.
        case expired
    }

    public var id: String
    public var merchantIdentifier: String
    public var state: State
    public var priced: PricedOrder
    /// The applicationData bytes sent in the payment request; tokens carry their SHA-256.
    public var applicationData: [UInt8]
    public var createdAt: Date
    /// When an open order stops taking payments (payment requests); nil: never.
    public var expiresAt: Date?
    /// Counts the order's pricings, from 1: each repricing makes the next. A payment is claimed
    /// for the version its token was checked against, so a repricing in between wins over it.
    public var priceVersion: Int

    public init(
        id: String, merchantIdentifier: String, state: State, priced: PricedOrder, applicationData: [UInt8], createdAt: Date,
        expiresAt: Date? = nil, priceVersion: Int = 1
    ) {
        self.priceVersion = priceVersion
        self.expiresAt = expiresAt
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.state = state
        self.priced = priced
        self.applicationData = applicationData
        self.createdAt = createdAt
    }
}

extension OrderRecord {
    /// A new open order at price version 1 under a fresh identifier, bound to its tokens by
    /// ``binding(orderId:)``, taking payments until `openFor` after `now`.
    public static func opened(merchantIdentifier: String, priced: PricedOrder, at now: Date, openFor: TimeInterval) -> OrderRecord {
        let id = RecordIdentifier.random()
        return OrderRecord(
            id: id, merchantIdentifier: merchantIdentifier, state: .open, priced: priced, applicationData: binding(orderId: id),
            createdAt: now, expiresAt: now.addingTimeInterval(openFor))
    }

    /// The applicationData an order's payment request carries, `orchard-order:<id>`: Apple signs
    /// its SHA-256 into the token, so a token pays only the order it was made for.
    public static func binding(orderId: String) -> [UInt8] {
        Array("orchard-order:\(orderId)".utf8)
    }

    /// The order at its next price version, priced so.
    public func repriced(_ priced: PricedOrder) -> OrderRecord {
        var next = self
        next.priced = priced
        next.priceVersion = priceVersion &+ 1
        return next
    }
}
