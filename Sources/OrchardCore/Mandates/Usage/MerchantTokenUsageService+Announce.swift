import ApplePay
import Crypto
import Foundation
import Logging

extension MerchantTokenUsageService {
    /// What one announcement came to.
    public enum Outcome: Sendable, Equatable {
        /// Apple took the metadata (`notify`).
        case announced
        /// Apple has no key for the token yet (202).
        case awaitingKey
        /// Nothing to announce: usage information off, or no active mandate on the token.
        case retired
        /// Apple could not be asked or refused: tried again later.
        case failed(String)
    }

    /// One pass: schedules announcements for new mandates, then leases the due ones and announces
    /// each. Returns how many were leased.
    @discardableResult
    public func announceDue(limit: Int = 32) async throws -> Int {
        guard tokens != nil else { return 0 }
        let now = time.now
        let merchants = usageMerchants()
        if !merchants.isEmpty {
            _ = try await store.scheduleUsageAnnouncements(merchantIdentifiers: merchants, at: now, limit: 256)
        }
        let leased = try await store.leaseUsageAnnouncements(at: now, until: now.addingTimeInterval(Self.lease), limit: limit)
        for row in leased {
            _ = await announce(row)
        }
        return leased.count
    }

    /// Announces one leased row and records the outcome.
    func announce(_ row: UsageAnnouncement) async -> Outcome {
        let metadata: Logger.Metadata = [
            "merchant": "\(row.merchantIdentifier)", "merchantTokenIdentifier": "\(row.merchantTokenIdentifier)",
        ]
        let outcome: Outcome
        var next = row
        do {
            outcome = try await attempt(&next)
        } catch {
            outcome = .failed("\(error)")
        }
        let now = time.now
        switch outcome {
        case .announced:
            next.state = .announced
            next.attempts = 0
            next.lastError = nil
            // Announced again before it runs out: a tenth of its life ahead, at least a day.
            let expires = next.expiresAt ?? now
            next.dueAt = expires.addingTimeInterval(-max(86_400, expires.timeIntervalSince(now) / 10))
            logger.info("merchant token usage information announced to Apple", metadata: metadata)
        case .awaitingKey:
            next.state = .awaitingKey
            next.dueAt = now.addingTimeInterval(Self.awaitingKeyRetry)
            logger.info("Apple has no key for the merchant token yet: announced once it has", metadata: metadata)
        case .retired:
            next.state = .retired
            next.dueAt = nil
        case .failed(let reason):
            next.attempts += 1
            next.lastError = String(reason.prefix(500))
            // 30 s, doubling, at most an hour: never given up, since nothing else would announce it.
            next.dueAt = now.addingTimeInterval(min(3600, 30 * pow(2, Double(min(next.attempts - 1, 12)))))
            logger.warning(
                "merchant token usage information not announced; tried again later",
                metadata: metadata.merging(["error": "\(reason)", "attempts": "\(next.attempts)"]) { $1 })
        }
        do {
            _ = try await store.recordUsageAnnouncement(next, expectedVersion: row.version)
        } catch {
            logger.error("an announcement's outcome could not be recorded", metadata: metadata.merging(["error": "\(error)"]) { $1 })
        }
        return outcome
    }

    /// Asks Apple for the token's key (repairing a missing notification URL once), seals a new
    /// authentication token with the web service URL to it, and notifies Apple. `row` gets what
    /// was announced.
    private func attempt(_ row: inout UsageAnnouncement) async throws -> Outcome {
        guard let tokens, let merchant = directory.merchant(identifier: row.merchantIdentifier),
            let settings = merchant.merchantTokenUsage
        else { return .retired }
        let active = try await mandates.mandates(
            merchantIdentifier: row.merchantIdentifier, merchantTokenIdentifier: row.merchantTokenIdentifier
        ).filter { $0.state == .active }
        guard !active.isEmpty else { return .retired }
        let token = row.merchantTokenIdentifier
        var answer = try await tokens.publicKey(merchantTokenIdentifier: token, for: merchant)
        if answer == .noNotificationURL {
            guard let url = settings.tokenNotificationURL(merchantIdentifier: merchant.merchantIdentifier) else {
                return .failed("Apple has no notification URL for the token, and none can be made from webServiceURL")
            }
            try await tokens.updateMerchantMetadata(merchantTokenIdentifier: token, tokenNotificationURL: url, for: merchant)
            answer = try await tokens.publicKey(merchantTokenIdentifier: token, for: merchant)
        }
        let keyText: String
        switch answer {
        case .notReady: return .awaitingKey
        case .noNotificationURL: return .failed("Apple still has no notification URL for the token after updateMerchantMetadata")
        case .ready(let publicKey, let ciphersuite):
            guard ciphersuite == UsageInformationSeal.ciphersuite else {
                return .failed("Apple named ciphersuite \(ciphersuite.prefix(64)), not \(UsageInformationSeal.ciphersuite)")
            }
            keyText = publicKey
        }
        guard let tokenKey = UsageInformationSeal.tokenKey(base64: keyText) else {
            return .failed("Apple's merchant token key is not a P-384 point")
        }
        let merchantKey = try await currentKey(merchantIdentifier: merchant.merchantIdentifier)
        let authentication = Self.newAuthenticationToken()
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let plaintext = try encoder.encode(["webServiceURL": settings.webServiceURL, "authenticationToken": authentication])
        let sealed = try UsageInformationSeal.seal(
            Array(plaintext), to: tokenKey, from: merchantKey.key, merchantTokenIdentifier: token)
        guard sealed.data.utf8.count <= MerchantTokenUsageSettings.appleDataLimit else {
            return .failed("the sealed metadata is over Apple's 4000 characters: shorten webServiceURL")
        }
        try await tokens.notify(merchantTokenIdentifier: token, metadata: MerchantTokenUsageMetadata(sealed), for: merchant)
        // Apple has it: the device may present this token from now on (the one before it too, until Apple's notification reaches it).
        row.previousTokenHash = row.tokenHash
        row.tokenHash = Array(SHA256.hash(data: Array(authentication.utf8)))
        row.tokenPublicKey = keyText
        row.keyId = merchantKey.id
        row.announcedAt = time.now
        row.expiresAt = time.now.addingTimeInterval(min(settings.validity, UsageInformation.maximumValidity))
        return .announced
    }

    /// 32 random bytes, base64url without padding.
    static func newAuthenticationToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
