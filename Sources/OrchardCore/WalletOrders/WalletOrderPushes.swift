import ApplePay
import Foundation
import Logging

/// Sends one push to Apple's push service for a Wallet order type (the adapter: APNs over HTTP/2).
public protocol WalletOrderPusher: Sendable {
    /// APNs's answer to the push, or no answer at all.
    func push(token: String, settings: WalletOrdersSettings) async -> WalletOrderPushAnswer
}

/// What APNs answered a push, as the adapter saw it.
public enum WalletOrderPushAnswer: Sendable, Equatable {
    /// An HTTP status and APNs's `reason` (from the JSON body; nil on success).
    case status(Int, reason: String?)
    /// No answer: the connection failed, timed out, or did not speak HTTP/2.
    case noAnswer(String)
}

/// What becomes of a push after each answer (APNs's status codes, "Handling notification
/// responses from APNs"): decided here once, whoever sends.
public enum WalletOrderPushPolicy {
    /// Attempts before a push that keeps failing is dropped: about two days at the backoff's cap.
    public static let maximumAttempts = 20

    public static func outcome(of answer: WalletOrderPushAnswer, attempts: Int, at now: Date) -> WalletOrderPushOutcome {
        let retry = { (error: String) -> WalletOrderPushOutcome in
            guard attempts + 1 < maximumAttempts else { return .dropped(error: "gave up after \(maximumAttempts) attempts: \(error)") }
            return .retry(at: now.addingTimeInterval(backoff(afterAttempt: attempts + 1)), error: error)
        }
        switch answer {
        case .status(200, _): return .delivered
        // The token is no longer valid for the topic, or never was for this environment: the device is gone.
        case .status(410, _), .status(400, "BadDeviceToken"), .status(400, "DeviceTokenNotForTopic"): return .unregistered
        // Throttled or Apple's trouble: later. A rejected certificate (403) may be renewed meanwhile.
        case .status(let status, let reason) where status == 429 || status == 403 || status >= 500:
            return retry("HTTP \(status) \(reason ?? "")")
        case .status(let status, let reason): return .dropped(error: "HTTP \(status) \(reason ?? "")")
        case .noAnswer(let error): return retry(error)
        }
    }

    /// 10 s, doubling, at most 3 hours.
    static func backoff(afterAttempt attempt: Int) -> TimeInterval {
        min(10 * pow(2, Double(min(attempt - 1, 20))), 3 * 3600)
    }
}

/// Sends the pushes the outbox owes: leases the due ones, sends each through ``WalletOrderPusher``
/// and records what APNs said, each attempt once. The loop around it is OrchardServices'.
public struct WalletOrderPushSender: Sendable {
    let store: any WalletOrderRecords
    let merchants: any WalletOrderMerchants
    let pusher: any WalletOrderPusher
    let time: TimeSource
    let logger: Logger

    /// How long a lease holds a push: longer than a push can take (its 10 s timeout), so no other instance sends it meanwhile.
    public static let lease: TimeInterval = 60

    public init(
        store: any WalletOrderRecords, merchants: any WalletOrderMerchants, pusher: any WalletOrderPusher, time: TimeSource, logger: Logger
    ) {
        self.store = store
        self.merchants = merchants
        self.pusher = pusher
        self.time = time
        self.logger = logger
    }

    /// One pass: up to `limit` due pushes sent, in parallel; how many were leased.
    @discardableResult
    public func sendDue(limit: Int = 64) async throws -> Int {
        let now = time.now
        let due = try await store.leaseWalletPushes(at: now, until: now.addingTimeInterval(Self.lease), limit: limit)
        await withTaskGroup(of: Void.self) { group in
            for push in due { group.addTask { await send(push) } }
        }
        return due.count
    }

    func send(_ push: WalletOrderPush) async {
        let outcome: WalletOrderPushOutcome
        if let settings = merchants.walletOrders(of: push.merchantIdentifier), settings.orderTypeIdentifier == push.orderTypeIdentifier {
            let answer = await pusher.push(token: push.pushToken, settings: settings)
            outcome = WalletOrderPushPolicy.outcome(of: answer, attempts: push.attempts, at: time.now)
        } else {
            outcome = .dropped(error: "the merchant no longer offers Wallet orders of this type")
        }
        // The token identifies a device: only its first characters are logged.
        let metadata: Logger.Metadata = [
            "merchant": "\(push.merchantIdentifier)", "orderType": "\(push.orderTypeIdentifier)",
            "token": "\(push.pushToken.prefix(8))…", "attempt": "\(push.attempts + 1)",
        ]
        switch outcome {
        case .delivered: logger.info("wallet order push sent", metadata: metadata)
        case .unregistered: logger.notice("wallet order push: the device is gone, unregistered", metadata: metadata)
        case .retry(_, let error):
            logger.warning("wallet order push failed: will retry", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        case .dropped(let error): logger.error("wallet order push dropped", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        do {
            _ = try await store.recordWalletPush(push, outcome: outcome)
        } catch {
            logger.error("wallet order push not recorded: it is sent again when its lease ends", metadata: metadata)
        }
    }
}
