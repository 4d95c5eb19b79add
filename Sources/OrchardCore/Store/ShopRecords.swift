import ApplePay
import Crypto
import Foundation

/// A merchant's secret API key as stored: its public ID and the SHA-256 of the secret, never the secret.
public struct APIKeyRecord: Sendable, Codable, Equatable {
    /// `key_` and 16 hex digits; the secret starts with it, so a lookup needs no scan.
    public var id: String
    public var merchantIdentifier: String
    public var secretHash: [UInt8]
    public var createdAt: Date
    public var revokedAt: Date?

    public init(id: String, merchantIdentifier: String, secretHash: [UInt8], createdAt: Date, revokedAt: Date? = nil) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.secretHash = secretHash
        self.createdAt = createdAt
        self.revokedAt = revokedAt
    }

    /// Active keys a merchant may hold at once: one in use and its replacement.
    public static let maximumActive = 2

    /// Checks that a merchant holding `active` active keys may add `key`: the cap every store
    /// applies, counting under its lock.
    public static func checkCap(adding key: APIKeyRecord, active: Int) throws(CoreError) {
        guard active < maximumActive else {
            throw CoreError(.limitReached, "\(key.merchantIdentifier) already has \(active) active API keys: revoke one first")
        }
    }

    /// A new key and its secret (`osk_<id>_<43 base64url characters>`, 256 random bits), shown once.
    public static func generate(merchantIdentifier: String, at date: Date) -> (record: APIKeyRecord, secret: String) {
        let id = "key_" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
        let random = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        let secret = "osk_\(id)_\(random)"
        return (APIKeyRecord(id: id, merchantIdentifier: merchantIdentifier, secretHash: hash(secret), createdAt: date), secret)
    }

    /// The key ID a presented secret names; nil for anything not shaped like a secret:
    /// `osk_key_`, 16 lowercase hex digits, `_`, 43 base64url characters.
    public static func keyId(ofSecret secret: String) -> String? {
        let parts = secret.utf8.split(separator: UInt8(ascii: "_"), maxSplits: 3, omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0].elementsEqual("osk".utf8), parts[1].elementsEqual("key".utf8),
            parts[2].count == 16, parts[2].allSatisfy(isLowercaseHex), parts[3].count == 43, parts[3].allSatisfy(isBase64URL)
        else { return nil }
        return "key_" + String(decoding: parts[2], as: UTF8.self)
    }

    private static func isLowercaseHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
    }

    private static func isBase64URL(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
    }

    public static func hash(_ secret: String) -> [UInt8] {
        Array(SHA256.hash(data: Array(secret.utf8)))
    }

    /// Whether `secret` is this key's, compared in constant time.
    public func matches(_ secret: String) -> Bool {
        ConstantTime.equal(Self.hash(secret), secretHash) && revokedAt == nil
    }
}

/// Equality that takes the same time wherever the inputs differ.
public enum ConstantTime {
    public static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for index in a.indices { difference |= a[index] ^ b[index] }
        return difference == 0
    }
}

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

extension RegisteredMerchant {
    /// The refusal of a registration naming a domain another merchant holds.
    public static func domainTaken(_ domain: String) -> CoreError {
        CoreError(.domainTaken, "\(domain) is already registered to another merchant")
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

/// Where a refund stands.
public enum RefundState: String, Sendable, Codable, CaseIterable {
    /// With the processor right now.
    case pending
    case refunded
    /// The processor refused it on its first send: nothing was refunded.
    case refused
    /// No definite answer: the same reference is re-sent by a retry with the same Idempotency-Key.
    case unknown
}

/// A refund of a settled payment. Pending, refunded and unknown refunds all count against
/// what is left to refund, so an unknown one can never let the total pass the payment.
public struct RefundRecord: Sendable, Codable, Equatable {
    public var id: String
    public var paymentId: String
    public var amount: Int64
    public var currency: String
    public var state: RefundState
    /// Sent to the processor: `<payment reference>-r<n>`, the same on every re-send.
    public var reference: String
    /// The shop's Idempotency-Key for this refund.
    public var idempotencyKey: String
    public var sends: Int
    public var processorReference: String?
    public var processorCode: String?
    public var processorMessage: String?
    /// The first send.
    public var createdAt: Date
    public var updatedAt: Date
    /// When the reference was last sent; nil in rows written before Orchard kept it (``sentLast``
    /// then reads ``updatedAt``).
    public var lastSentAt: Date?

    public init(
        id: String, paymentId: String, amount: Int64, currency: String, state: RefundState, reference: String, idempotencyKey: String,
        sends: Int = 1, processorReference: String? = nil, processorCode: String? = nil, processorMessage: String? = nil,
        createdAt: Date, updatedAt: Date? = nil, lastSentAt: Date? = nil
    ) {
        self.lastSentAt = lastSentAt
        self.id = id
        self.paymentId = paymentId
        self.amount = amount
        self.currency = currency
        self.state = state
        self.reference = reference
        self.idempotencyKey = idempotencyKey
        self.sends = sends
        self.processorReference = processorReference
        self.processorCode = processorCode
        self.processorMessage = processorMessage
        self.createdAt = createdAt
        self.updatedAt = updatedAt ?? createdAt
    }

    /// Whether it counts against the payment's refundable amount.
    public var holdsAmount: Bool { state != .refused }

    /// The reference's last send, or for a row from before Orchard kept it, its last change.
    public var sentLast: Date { lastSentAt ?? updatedAt }
}

extension RefundRecord {
    /// What a repeated Idempotency-Key gets, as every store decides it: nil when this refund
    /// comes back as it is, or the refund re-sent under its reference (pending, one more send,
    /// sent last at the draft's time) when its outcome is unknown; the store writes that change.
    /// `draft.sends` is how often the engine saw it sent when it decided to re-send it (after
    /// asking the processor): another count means someone re-sent it meanwhile. Throws when the
    /// key named another amount, or while (or since) a call for it is with the processor.
    public func repeated(like draft: RefundRecord) throws(CoreError) -> RefundRecord? {
        guard amount == draft.amount else {
            throw CoreError(.idempotencyMismatch, "this Idempotency-Key was used for a refund of \(amount)")
        }
        switch state {
        case .pending:
            throw CoreError(.paymentInProgress, "this refund is with the processor right now; ask again shortly")
        case .refunded, .refused:
            return nil
        case .unknown:
            guard draft.sends == sends else {
                throw CoreError(.paymentInProgress, "this refund was sent again meanwhile; ask again shortly")
            }
            var resent = self
            resent.state = .pending
            resent.sends += 1
            resent.updatedAt = draft.createdAt
            resent.lastSentAt = draft.createdAt
            return resent
        }
    }
}
