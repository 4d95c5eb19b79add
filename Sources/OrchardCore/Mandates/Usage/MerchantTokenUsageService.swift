import ApplePay
import Crypto
import Foundation
import Logging
import WalletOrders

/// Merchant token usage information (WWDC25): Orchard announces each merchant token's usage to
/// Apple, sealed with HPKE to the token's key, and answers the shopper's device with a sealed
/// package of the token's past and upcoming payments, which Wallet shows.
///
/// The announcements are an outbox (``MerchantTokenUsageRecords``): due when a mandate gets a
/// merchant token, after each charge, after its schedule changes, after a key rotation or
/// Apple's new token key, and before the announced information expires. The package itself is
/// made when the device asks, from the mandates as they stand, so it is never stale.
public struct MerchantTokenUsageService: Sendable {
    let store: any MerchantTokenUsageRecords
    let mandates: any MandateRecords
    let orders: any OrderPayments
    /// Apple's Merchant Token Management API; nil: nothing is announced.
    let tokens: (any MerchantTokenService)?
    let directory: any MerchantLookup
    /// The merchants with usage information on, for the sweep that finds new mandates.
    let usageMerchants: @Sendable () -> [String]
    let vault: PaymentVault
    let time: TimeSource
    let logger: Logger

    public init(
        store: any MerchantTokenUsageRecords, mandates: any MandateRecords, orders: any OrderPayments, tokens: (any MerchantTokenService)?,
        directory: any MerchantLookup, usageMerchants: @escaping @Sendable () -> [String], vault: PaymentVault, time: TimeSource,
        logger: Logger
    ) {
        self.store = store
        self.mandates = mandates
        self.orders = orders
        self.tokens = tokens
        self.directory = directory
        self.usageMerchants = usageMerchants
        self.vault = vault
        self.time = time
        self.logger = logger
    }

    /// How long a leased announcement is held before another instance may take it.
    static let lease: TimeInterval = 60
    /// How soon Apple is asked again for a token key it did not have (its own event comes first, normally).
    static let awaitingKeyRetry: TimeInterval = 6 * 3600
    /// The most payments one package is made from.
    static let maximumPayments = 50
    /// The authorization scheme the device uses.
    public static let authorizationScheme = "ApplePayMerchantTokenUsageInformation"

    // MARK: Triggers

    /// The token's announcement is due now (a charge, a schedule change, Apple's new token key),
    /// when its merchant has usage information on; nothing otherwise.
    public func markDue(merchantIdentifier: String, merchantTokenIdentifier: String) async {
        guard directory.merchant(identifier: merchantIdentifier)?.merchantTokenUsage != nil else { return }
        do {
            try await store.markUsageDue(
                merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: merchantTokenIdentifier, at: time.now)
        } catch {
            // The sweep before expiry announces it again in any case; the package is made live.
            logger.warning(
                "the merchant token's usage information could not be marked for announcing",
                metadata: ["merchant": "\(merchantIdentifier)", "error": "\(error)"])
        }
    }

    /// A mandate was charged: its token's usage information is announced again.
    public func mandateCharged(_ mandate: MandateRecord) async {
        guard let token = mandate.merchantTokenIdentifier else { return }
        await markDue(merchantIdentifier: mandate.merchantIdentifier, merchantTokenIdentifier: token)
    }

    // MARK: Keys

    /// The merchant's current usage key, made (and sealed) the first time it is needed.
    func currentKey(merchantIdentifier: String) async throws -> (id: String, key: P384.KeyAgreement.PrivateKey) {
        for _ in 0..<3 {
            if let record = try await store.currentUsageKey(merchantIdentifier: merchantIdentifier) {
                return (record.id, try vault.openUsageKey(record.sealed, merchantIdentifier: merchantIdentifier, keyId: record.id))
            }
            let made = try newKey(merchantIdentifier: merchantIdentifier)
            if try await store.addUsageKey(made.record, replacing: nil) {
                logger.notice(
                    "a usage key was made for the merchant", metadata: ["merchant": "\(merchantIdentifier)", "key": "\(made.record.id)"])
                return (made.record.id, made.key)
            }
            // Another instance made it first: read theirs.
        }
        throw CoreError(.storage, "the merchant's usage key could not be read or made")
    }

    /// Replaces the merchant's usage key and makes every one of its tokens due for announcing
    /// with the new key. Returns the new key and how many announcements are due.
    public func rotateKey(merchantIdentifier: String) async throws -> (key: UsageKeyRecord, due: Int) {
        guard directory.merchant(identifier: merchantIdentifier)?.merchantTokenUsage != nil else {
            throw CoreError(
                .notFound, "\(merchantIdentifier.prefix(255)) is no merchant with merchantTokenUsage: it has no usage key to rotate")
        }
        let current = try await store.currentUsageKey(merchantIdentifier: merchantIdentifier)
        let made = try newKey(merchantIdentifier: merchantIdentifier)
        guard try await store.addUsageKey(made.record, replacing: current?.id) else {
            throw CoreError(.invalidState, "the usage key changed meanwhile (another rotation?): try again")
        }
        let due = try await store.markAllUsageDue(merchantIdentifier: merchantIdentifier, at: time.now)
        logger.notice(
            "the merchant's usage key was rotated; its tokens are announced again",
            metadata: ["merchant": "\(merchantIdentifier)", "key": "\(made.record.id)", "due": "\(due)"])
        return (made.record, due)
    }

    private func newKey(merchantIdentifier: String) throws -> (record: UsageKeyRecord, key: P384.KeyAgreement.PrivateKey) {
        let key = P384.KeyAgreement.PrivateKey()
        let id = UsageKeyRecord.newIdentifier()
        let sealed = try vault.sealUsageKey(key, merchantIdentifier: merchantIdentifier, keyId: id)
        return (UsageKeyRecord(id: id, merchantIdentifier: merchantIdentifier, sealed: sealed, createdAt: time.now), key)
    }

    // MARK: The package

    /// The sealed package for the device presenting `authorization` (the whole header) for the
    /// token; nil, alike, for a token Orchard does not know, another merchant's, a wrong or
    /// missing authentication token, or a merchant that turned usage information off.
    public func package(merchantTokenIdentifier: String, authorization: String?) async throws -> MerchantTokenUsagePackage? {
        guard MerchantTokenEvent.isValidIdentifier(merchantTokenIdentifier), let presented = Self.authenticationToken(authorization)
        else { return nil }
        let hash = Array(SHA256.hash(data: Array(presented.utf8)))
        let rows = try await store.usageAnnouncements(merchantTokenIdentifier: merchantTokenIdentifier)
        // Every row and both hashes are compared, in constant time each.
        var match: UsageAnnouncement?
        for row in rows {
            let current = row.tokenHash.map { ConstantTime.equal($0, hash) } ?? false
            let previous = row.previousTokenHash.map { ConstantTime.equal($0, hash) } ?? false
            if current || previous { match = row }
        }
        guard let row = match, row.state != .retired, let tokenKeyText = row.tokenPublicKey,
            let tokenKey = UsageInformationSeal.tokenKey(base64: tokenKeyText),
            let merchant = directory.merchant(identifier: row.merchantIdentifier), let settings = merchant.merchantTokenUsage
        else { return nil }
        let usages = try await mandateUsages(merchantIdentifier: row.merchantIdentifier, token: merchantTokenIdentifier)
        let key = try await currentKey(merchantIdentifier: row.merchantIdentifier)
        let sealed = try sealPackage(
            usages, settings: settings, token: merchantTokenIdentifier, tokenKey: tokenKey, merchantKey: key.key)
        return MerchantTokenUsagePackage(sealed)
    }

    /// The token from `ApplePayMerchantTokenUsageInformation <token>`; nil for anything else.
    static func authenticationToken(_ header: String?) -> String? {
        guard let header, header.utf8.count <= 512 else { return nil }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0] == authorizationScheme else { return nil }
        let token = parts[1].trimmingCharacters(in: .whitespaces)
        return token.isEmpty ? nil : token
    }

    /// The token's mandates with their first orders and payments.
    func mandateUsages(merchantIdentifier: String, token: String) async throws -> [MandateUsage] {
        var usages: [MandateUsage] = []
        for mandate in try await mandates.mandates(merchantIdentifier: merchantIdentifier, merchantTokenIdentifier: token).prefix(5) {
            let order = try await orders.order(id: mandate.orderId)
            let payments = try await store.payments(mandateId: mandate.id, limit: Self.maximumPayments)
            usages.append(MandateUsage(mandate: mandate, firstOrder: order?.priced, payments: payments))
        }
        return usages
    }

    /// The zip holding `usageInformation.json` (and the logo, if configured), sealed; past
    /// payments are left out, oldest first, until the sealed data fits the configured size.
    func sealPackage(
        _ usages: [MandateUsage], settings: MerchantTokenUsageSettings, token: String, tokenKey: P384.KeyAgreement.PublicKey,
        merchantKey: P384.KeyAgreement.PrivateKey
    ) throws -> UsageInformationSeal.Sealed {
        let now = time.now
        let builder = UsageInformationBuilder(settings: settings, now: now)
        let total = usages.reduce(0) { $0 + $1.payments.count }
        var logo = settings.logoPNG
        var pastLimit = total
        while true {
            var document = builder.document(merchantTokenIdentifier: token, mandates: usages, pastLimit: pastLimit)
            var entries: [StoredZip.Entry] = []
            if let logo {
                document.merchantLogoName = "merchantLogo"
                entries.append(StoredZip.Entry(path: "merchantLogo@2x.png", bytes: logo))
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            entries.insert(StoredZip.Entry(path: "usageInformation.json", bytes: Array(try encoder.encode(document))), at: 0)
            let zip = try StoredZip.archive(entries, modified: now)
            let sealed = try UsageInformationSeal.seal(zip, to: tokenKey, from: merchantKey, merchantTokenIdentifier: token)
            if sealed.data.utf8.count <= settings.maximumDataCharacters { return sealed }
            if logo != nil {
                logo = nil
            } else if pastLimit > 0 {
                pastLimit -= 1
            } else {
                throw CoreError(
                    .inconsistent, "the usage information does not fit merchantTokenUsage.maximumDataCharacters even with no past payment")
            }
        }
    }
}
