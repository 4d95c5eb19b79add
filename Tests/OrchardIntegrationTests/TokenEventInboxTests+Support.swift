import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardServer
import OrchardServices
import OrchardTesting

/// What the token-event scenarios need of this branch's API: the inbox's settings and a look
/// into it. Kept apart from the scenarios so that they build unchanged on a commit without the
/// inbox (with this file replaced by a stub), which is how they are shown to fail there.
enum TokenEventInboxSupport {
    static let policy = TokenEventPolicy()

    /// Short polls and retries for the tests; `perClientIP` and `perMerchant` limit the token
    /// notifications of one address and of one merchant (each burst a minute's worth).
    static func configure(_ file: inout ConfigurationFile, perClientIP: Int? = nil, perMerchant: Int? = nil) {
        file.tokenEvents = .init(pollIntervalMilliseconds: 100, firstRetrySeconds: 1, maximumRetrySeconds: 2)
        guard perClientIP != nil || perMerchant != nil else { return }
        var limits = file.limits ?? .init()
        limits.tokenEvents = .init(
            perClientIP: perClientIP.map { .init(perMinute: $0, burst: $0) },
            perMerchant: perMerchant.map { .init(perMinute: $0, burst: $0) })
        file.limits = limits
    }

    /// The most fetches one untrusted address's notifications may cause in `seconds`.
    static func probationAllowance(seconds: Double) -> Int {
        policy.probationPerSource.burst + Int((Double(policy.probationPerSource.perMinute) * seconds / 60).rounded(.up))
    }

    /// How often Orchard tried to fetch the event and got no answer from Apple; nil when the inbox does not hold it.
    static func failedAttempts(_ store: any OrchardStore, merchant: String, eventId: String) async throws -> Int? {
        try await store.tokenEvent(merchantIdentifier: merchant, eventId: eventId)?.attempts
    }

    /// Whether the inbox holds the event, applied.
    static func isApplied(_ store: any OrchardStore, merchant: String, eventId: String) async throws -> Bool {
        try await store.tokenEvent(merchantIdentifier: merchant, eventId: eventId)?.state == .applied
    }

    /// Makes Apple unreachable for merchant token calls (each connection reset, nothing answered), or reachable again.
    static func setUnreachable(_ gateway: MockAppleGateway, _ unreachable: Bool) async {
        gateway.merchantTokenCallsReset = unreachable
    }
}
