import Foundation
import WalletOrders

/// A paid payment's order in the shopper's Wallet, as stored: what identifies it to Wallet, the
/// hash of its authentication token (never the token), and what the shop has told of its delivery.
/// Everything else Wallet shows is read from the order and payment when the package is built.
public struct WalletOrderRecord: Sendable, Codable, Equatable {
    /// Random, unique for the type: Wallet's `orderIdentifier`.
    public var orderIdentifier: String
    public var orderTypeIdentifier: String
    public var merchantIdentifier: String
    public var paymentId: String
    /// SHA-256 of the `authenticationToken` Wallet sends as `AppleOrder <token>`.
    public var authenticationTokenHash: [UInt8]
    public var createdAt: Date
    /// Whole seconds, and strictly later at each change: `Last-Modified` carries it exactly.
    public var updatedAt: Date
    /// Counts the changes, from 1: each is a compare-and-set on it.
    public var version: Int
    public var fulfillments: [WalletOrder.Fulfillment]

    public init(
        orderIdentifier: String, orderTypeIdentifier: String, merchantIdentifier: String, paymentId: String,
        authenticationTokenHash: [UInt8], createdAt: Date, updatedAt: Date, version: Int = 1, fulfillments: [WalletOrder.Fulfillment] = []
    ) {
        self.orderIdentifier = orderIdentifier
        self.orderTypeIdentifier = orderTypeIdentifier
        self.merchantIdentifier = merchantIdentifier
        self.paymentId = paymentId
        self.authenticationTokenHash = authenticationTokenHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.version = version
        self.fulfillments = fulfillments
    }
}

/// A device Wallet registered for an order's updates.
public struct WalletOrderRegistration: Sendable, Codable, Equatable {
    public var deviceIdentifier: String
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    /// The device's APNs token (hex).
    public var pushToken: String
    public var createdAt: Date

    public init(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String, pushToken: String, createdAt: Date) {
        self.deviceIdentifier = deviceIdentifier
        self.orderTypeIdentifier = orderTypeIdentifier
        self.orderIdentifier = orderIdentifier
        self.pushToken = pushToken
        self.createdAt = createdAt
    }
}

/// A push owed to one device token for one order type: its payload is empty, so one pending push
/// per (token, type) says all that any number of changes would.
public struct WalletOrderPush: Sendable, Codable, Equatable {
    public var id: String
    public var merchantIdentifier: String
    public var orderTypeIdentifier: String
    public var pushToken: String
    public var attempts: Int
    public var createdAt: Date
    public var nextAttemptAt: Date

    public init(
        id: String, merchantIdentifier: String, orderTypeIdentifier: String, pushToken: String, attempts: Int = 0, createdAt: Date,
        nextAttemptAt: Date
    ) {
        self.id = id
        self.merchantIdentifier = merchantIdentifier
        self.orderTypeIdentifier = orderTypeIdentifier
        self.pushToken = pushToken
        self.attempts = attempts
        self.createdAt = createdAt
        self.nextAttemptAt = nextAttemptAt
    }
}

/// What became of a push attempt, for ``WalletOrderRecords/recordWalletPush(_:)``.
public enum WalletOrderPushOutcome: Sendable, Equatable {
    /// APNs took it (200): the push is done.
    case delivered
    /// Try again at the date (no answer, 429, 5xx, …).
    case retry(at: Date, error: String)
    /// APNs will never take it (400, 403, 413, or out of attempts): dropped.
    case dropped(error: String)
    /// APNs says the token is no longer valid (410): dropped, and every registration with the token removed.
    case unregistered
}

/// Wallet orders: one per payment that has one, the devices registered for each, and the durable
/// outbox of pushes owed them. Every change is one transaction.
public protocol WalletOrderRecords: Sendable {
    /// Inserts `order` unless its payment has one; the stored one, and whether it is `order`.
    func createWalletOrder(_ order: WalletOrderRecord) async throws -> (record: WalletOrderRecord, created: Bool)
    func walletOrder(orderTypeIdentifier: String, orderIdentifier: String) async throws -> WalletOrderRecord?
    func walletOrder(paymentId: String) async throws -> WalletOrderRecord?
    /// Writes `next` if the stored order is still at `next.version - 1`, and in the same
    /// transaction queues a push, due `next.updatedAt`, to each device registered for it (one per
    /// token and type: a pending one is left as it is) and inserts `event` when given. Nil when
    /// the order moved on meanwhile; else the number of devices registered.
    func updateWalletOrder(_ next: WalletOrderRecord, event: WebhookEvent?) async throws -> Int?
    /// Registers a device for an order; false when it already was (its push token is updated),
    /// nil when the order has `limit` devices already.
    func registerWalletDevice(_ registration: WalletOrderRegistration, limit: Int) async throws -> Bool?
    /// False when the device was not registered for the order.
    func unregisterWalletDevice(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String) async throws -> Bool
    /// The orders of `orderTypeIdentifier` the device is registered for, changed after `since`
    /// (all when nil), oldest change first, at most `limit`.
    func walletOrders(deviceIdentifier: String, orderTypeIdentifier: String, changedAfter since: Date?, limit: Int) async throws
        -> [WalletOrderRecord]
    /// Leases due pushes, oldest due first: their next attempt moves to `leaseEnd` in the same transaction.
    func leaseWalletPushes(at date: Date, until leaseEnd: Date, limit: Int) async throws -> [WalletOrderPush]
    /// Records an attempt made from `push.attempts` (a compare-and-set); false when another did.
    func recordWalletPush(_ push: WalletOrderPush, outcome: WalletOrderPushOutcome) async throws -> Bool
}
