import ApplePay
import Crypto
import Foundation

/// Where a merchant's webhooks go and the secret they are signed with.
public struct WebhookEndpoint: Sendable {
    public var url: String
    public var secret: Secret
    /// During a rotation, the secret being replaced: deliveries carry a Standard Webhooks
    /// signature with it too, so the shop can switch its receiver at any time.
    public var previousSecret: Secret?
    /// Who set it: a tenant's endpoint is called only on public addresses (``TenantDestinations``).
    public var chosenBy: DestinationChooser

    public init(url: String, secret: Secret, previousSecret: Secret? = nil, chosenBy: DestinationChooser = .configuration) {
        self.url = url
        self.secret = secret
        self.previousSecret = previousSecret
        self.chosenBy = chosenBy
    }

    /// An https URL, or http to a loopback host (a sidecar on the same machine); nothing else.
    public static func check(_ url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            let host = components.host?.lowercased(), !host.isEmpty, components.user == nil, components.password == nil
        else { return "must be an absolute URL like https://shop.example/orchard/webhooks" }
        let loopback = host == "localhost" || host == "127.0.0.1" || host == "::1"
        guard scheme == "https" || (scheme == "http" && loopback) else {
            return "must be https (plain http only to localhost, 127.0.0.1 or ::1)"
        }
        return nil
    }
}

/// A call to a shop refused before it was sent: as many calls for its merchant as allowed are in flight.
public struct ShopCallsBusy: Error, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// POSTs to the shop (webhooks, quotes); throwing means no answer was seen. A tenant's endpoint
/// (``WebhookEndpoint/chosenBy``) is reached only on the addresses ``TenantDestinations`` allows,
/// checked when each connection is made. Calls for one merchant are bounded in number
/// (`merchant`): past the bound one fails at once, unsent (``ShopCallsBusy``), so one shop's slow
/// endpoint cannot take the connections every other shop's calls need.
public protocol ShopTransport: Sendable {
    func post(
        to endpoint: WebhookEndpoint, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration, merchant: String
    ) async throws
        -> (status: Int, body: [UInt8])
}

/// `Orchard-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>">`: Orchard's own
/// scheme, deprecated for ``StandardWebhookSignature`` and sent beside it until 1.0. A receiver
/// recomputes the MAC over the raw body, compares in constant time and refuses a timestamp older
/// than its tolerance (replays). The key is ``Secret/webhookKey``: a secret's UTF-8 bytes, as it
/// always was, or a `whsec_` secret's decoded bytes.
public enum WebhookSignature {
    public static let header = "Orchard-Signature"

    public static func sign(body: [UInt8], secret: Secret, timestamp: Int64) -> String {
        "t=\(timestamp),v1=\(Hex.encode(mac(body: body, secret: secret, timestamp: timestamp)))"
    }

    /// Whether `header` signs `body` with `secret` within `tolerance` of `now`.
    public static func verify(header: String, body: [UInt8], secret: Secret, now: Date, tolerance: TimeInterval = 300) -> Bool {
        var timestamp: Int64?
        var signatures: [[UInt8]] = []
        for part in header.split(separator: ",") {
            let pair = part.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard pair.count == 2 else { continue }
            if pair[0] == "t" { timestamp = Int64(pair[1]) }
            if pair[0] == "v1", let bytes = Hex.decode(pair[1]) { signatures.append(bytes) }
        }
        guard let timestamp, abs(now.timeIntervalSince1970 - TimeInterval(timestamp)) <= tolerance else { return false }
        let expected = mac(body: body, secret: secret, timestamp: timestamp)
        return signatures.contains { ConstantTime.equal($0, expected) }
    }

    static func mac(body: [UInt8], secret: Secret, timestamp: Int64) -> [UInt8] {
        let signed = Array("\(timestamp).".utf8) + body
        return Array(HMAC<SHA256>.authenticationCode(for: signed, using: SymmetricKey(data: secret.webhookKey ?? [])))
    }
}

/// How webhooks are retried: exponential backoff from `firstRetry`, capped at `maximumRetry`,
/// until `retryWindow` after the event; then it is `failed` until replayed.
public struct WebhookPolicy: Sendable {
    public var firstRetry: Duration
    public var maximumRetry: Duration
    public var retryWindow: Duration
    /// One attempt's deadline.
    public var timeout: Duration
    /// How often the outbox is read for due events.
    public var pollInterval: Duration
    /// How long a pass holds the events it took (other instances pass them by meanwhile), at
    /// least two attempts' deadlines: an event whose attempt could not end within it is left to
    /// the next pass, and after a crash an event waits this long for another instance.
    public var lease: Duration
    /// Attempts in flight to one merchant's endpoint at once: 1 keeps its events in order.
    public var concurrencyPerEndpoint: Int
    /// How many of one merchant's due events a pass takes: what its endpoint gets before the
    /// outbox is read again for it.
    public var batchPerMerchant = 10
    /// Merchants whose events are being sent at once, at most (each endpoint its own worker).
    public var merchantsInFlight = 64

    public init(
        firstRetry: Duration = .seconds(30), maximumRetry: Duration = .seconds(3600), retryWindow: Duration = .seconds(3 * 86_400),
        timeout: Duration = .seconds(10), pollInterval: Duration = .seconds(1), lease: Duration = .seconds(30),
        concurrencyPerEndpoint: Int = 1
    ) {
        self.firstRetry = firstRetry
        self.maximumRetry = maximumRetry
        self.retryWindow = retryWindow
        self.timeout = timeout
        self.pollInterval = pollInterval
        self.lease = lease
        self.concurrencyPerEndpoint = concurrencyPerEndpoint
    }

    /// What one pass leases while the merchants in `busy` are still being sent to: a batch for
    /// each merchant with due events, never more merchants than may be in flight.
    public func lease(busy: Set<String>) -> WebhookLease? {
        let free = merchantsInFlight - busy.count
        guard free > 0 else { return nil }
        return WebhookLease(merchants: free, perMerchant: batchPerMerchant, excluding: busy)
    }

    /// How long a merchant's batch is held: every attempt of it, `concurrencyPerEndpoint` at a
    /// time, within its deadline, and one deadline to spare; never less than ``lease``.
    public var batchLease: Duration {
        let rounds = (batchPerMerchant + concurrencyPerEndpoint - 1) / max(1, concurrencyPerEndpoint)
        return max(lease, timeout * (rounds + 1))
    }

    /// When an event that failed `attempts` times (this one included) is next tried; nil: give up.
    public func nextAttempt(after attempts: Int, createdAt: Date, now: Date) -> Date? {
        let first = firstRetry.timeInterval
        let cap = Double(maximumRetry.components.seconds)
        let delay = min(first * pow(2, Double(min(max(attempts - 1, 0), 30))), cap)
        let next = now.addingTimeInterval(delay)
        return next.timeIntervalSince(createdAt) > Double(retryWindow.components.seconds) ? nil : next
    }
}
