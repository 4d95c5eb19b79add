import ApplePay
import Crypto
import Foundation

extension PaymentRequestRecord {
    /// The answer to `request` when this request already holds its merchant's Idempotency-Key:
    /// this request, if the bodies' fingerprints match (compared in constant time); otherwise a
    /// refusal, and nothing is created.
    public func replay(for request: PaymentRequestRecord) throws(CoreError) -> PaymentRequestRecord {
        guard ConstantTime.equal(fingerprint, request.fingerprint) else {
            throw CoreError(
                .idempotencyMismatch, "this Idempotency-Key was used for another request body; use a new key for a new request")
        }
        return self
    }
}

/// A payment request the shop's backend created (`POST /v1/payment-requests`); its order has the same ID.
public struct PaymentRequestRecord: Sendable, Codable, Equatable {
    public var id: String
    public var merchantIdentifier: String
    /// The shop's own reference (its order number).
    public var reference: String
    public var metadata: [String: String]
    public var cart: ShopCart
    public var idempotencyKey: String
    /// SHA-256 of the creating request's body: the same key with another body is refused.
    public var fingerprint: [UInt8]
    public var expiresAt: Date
    public var createdAt: Date

    public init(
        id: String, merchantIdentifier: String, reference: String, metadata: [String: String], cart: ShopCart, idempotencyKey: String,
        fingerprint: [UInt8], expiresAt: Date, createdAt: Date
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.reference = reference
        self.metadata = metadata
        self.cart = cart
        self.idempotencyKey = idempotencyKey
        self.fingerprint = fingerprint
        self.expiresAt = expiresAt
        self.createdAt = createdAt
    }
}
