import Foundation

/// A merchant's P-384 usage key, sealed under the vault key (``PaymentVault/sealUsageKey(_:merchantIdentifier:keyId:)``):
/// a copy of the database alone holds no usable key.
public struct UsageKeyRecord: Sendable, Codable, Equatable {
    /// `uk_` and 32 hex digits.
    public var id: String
    public var merchantIdentifier: String
    public var sealed: [UInt8]
    public var createdAt: Date
    /// When a rotation replaced it; nil for the merchant's current key.
    public var retiredAt: Date?

    public init(id: String, merchantIdentifier: String, sealed: [UInt8], createdAt: Date, retiredAt: Date? = nil) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.sealed = sealed
        self.createdAt = createdAt
        self.retiredAt = retiredAt
    }

    public static func newIdentifier() -> String { "uk_" + RecordIdentifier.random() }
}

/// Where one merchant token's usage information stands with Apple: one per (merchant, token),
/// an outbox row the announcement loop leases when it is due.
public struct UsageAnnouncement: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable, CaseIterable {
        /// To announce (first time, or again after a charge, a schedule change or a new key).
        case pending
        /// Apple has no key for the token yet (its 202): asked again when Apple's
        /// `UPDATED_MERCHANT_TOKEN_PUBLIC_KEY` event comes, and now and then meanwhile.
        case awaitingKey
        /// Apple took the announcement; due again before `expiresAt`.
        case announced
        /// Nothing to announce any more: the merchant turned it off or the token's mandates ended.
        case retired
    }

    public var merchantIdentifier: String
    public var merchantTokenIdentifier: String
    public var state: State
    /// When the loop should take it up; nil: never (retired).
    public var dueAt: Date?
    /// Failed tries since the last success.
    public var attempts: Int
    /// SHA-256 of the device's `authenticationToken` announced last, and of the one before it
    /// (a device may still hold it until Apple's notification reaches it). Never the token.
    public var tokenHash: [UInt8]?
    public var previousTokenHash: [UInt8]?
    /// The token's P-384 key as Apple answered it (base64 X9.63): the package is sealed to it.
    public var tokenPublicKey: String?
    /// The usage key the last announcement was sealed with.
    public var keyId: String?
    public var announcedAt: Date?
    /// The announced information's `expirationDate`.
    public var expiresAt: Date?
    public var lastError: String?
    /// Bumped by every write: a write is a compare-and-set on it.
    public var version: Int

    public init(
        merchantIdentifier: String, merchantTokenIdentifier: String, state: State = .pending, dueAt: Date?, attempts: Int = 0,
        tokenHash: [UInt8]? = nil, previousTokenHash: [UInt8]? = nil, tokenPublicKey: String? = nil, keyId: String? = nil,
        announcedAt: Date? = nil, expiresAt: Date? = nil, lastError: String? = nil, version: Int = 1
    ) {
        self.merchantIdentifier = merchantIdentifier
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.state = state
        self.dueAt = dueAt
        self.attempts = attempts
        self.tokenHash = tokenHash
        self.previousTokenHash = previousTokenHash
        self.tokenPublicKey = tokenPublicKey
        self.keyId = keyId
        self.announcedAt = announcedAt
        self.expiresAt = expiresAt
        self.lastError = lastError
        self.version = version
    }
}

/// Usage keys and announcements as stored. Adapters only insert, lease and compare-and-set;
/// ``MerchantTokenUsageService`` decides.
public protocol MerchantTokenUsageRecords: Sendable {
    /// The merchant's current (unretired) usage key.
    func currentUsageKey(merchantIdentifier: String) async throws -> UsageKeyRecord?
    /// In one transaction: when the merchant's current key is `replacing` (nil: it has none),
    /// retires it at `key.createdAt` and inserts `key` as current; false, changing nothing, otherwise
    /// (another instance made or rotated the key first).
    func addUsageKey(_ key: UsageKeyRecord, replacing: String?) async throws -> Bool
    /// Makes the token's announcement due at `date`: inserts it pending, or moves its due time
    /// to `date` if that is sooner and sets it pending again, bumping its version.
    func markUsageDue(merchantIdentifier: String, merchantTokenIdentifier: String, at date: Date) async throws
    /// Makes every announcement of the merchant that is not retired due at `date` (a new key).
    func markAllUsageDue(merchantIdentifier: String, at date: Date) async throws -> Int
    /// Inserts a pending announcement, due at `date`, for each active mandate of these merchants
    /// with a merchant token and none yet; at most `limit`. How many it inserted.
    func scheduleUsageAnnouncements(merchantIdentifiers: [String], at date: Date, limit: Int) async throws -> Int
    /// Leases announcements due at `date`, soonest first, at most `limit`: in one transaction
    /// their due time moves to `leaseEnd` and their version is bumped (the rows come back so).
    func leaseUsageAnnouncements(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [UsageAnnouncement]
    /// Writes what an announcement attempt came to, bumping the version. Its key, token hashes,
    /// times, attempts and error are written whatever the version (what was sent to Apple must be
    /// known); its state and due time only when the stored row still has `expectedVersion`, so a
    /// ``markUsageDue(merchantIdentifier:merchantTokenIdentifier:at:)`` made meanwhile keeps it
    /// due. True when the version matched.
    func recordUsageAnnouncement(_ announcement: UsageAnnouncement, expectedVersion: Int) async throws -> Bool
    /// Every merchant's announcement of this token identifier (normally one).
    func usageAnnouncements(merchantTokenIdentifier: String) async throws -> [UsageAnnouncement]
    /// The payments a mandate set up or charged, newest first, at most `limit`.
    func payments(mandateId: String, limit: Int) async throws -> [PaymentRecord]
}
