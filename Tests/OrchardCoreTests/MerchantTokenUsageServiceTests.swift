import ApplePay
import Crypto
import Foundation
import Logging
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing
import WalletOrders

@testable import OrchardCore

/// ``MerchantTokenUsageService`` in memory, with Apple's token API played by a fake that keeps
/// each token's key as the device would: what is announced and when, the package the device gets
/// (opened here with swift-crypto; Tests/UsageInformation opens it with PyPI's pyhpke), and the
/// refusals that look alike.
@Suite("Merchant token usage information: announced, served and sealed, in memory")
struct MerchantTokenUsageServiceTests {
    static let webServiceURL = "https://pay.shop.example/apple-pay/merchant-token-usage"
    let charges = MandateChargeServiceTests()
    let apple = FakeUsageAPI()
    let merchant: MerchantConfiguration
    let other: MerchantConfiguration

    init() throws {
        var merchant = try ServiceFixtures.merchant(MandateChargeServiceTests.merchant)
        merchant.merchantTokenUsage = MerchantTokenUsageSettings(webServiceURL: Self.webServiceURL, merchantName: "Orchard Coffee")
        self.merchant = merchant
        var other = try ServiceFixtures.merchant("merchant.other")
        other.merchantTokenUsage = merchant.merchantTokenUsage
        self.other = other
    }

    var service: MerchantTokenUsageService {
        let merchants = [merchant, other]
        return MerchantTokenUsageService(
            store: charges.store, mandates: charges.store, orders: charges.store, tokens: apple,
            directory: UsageMerchants(merchants: merchants), usageMerchants: { merchants.map(\.merchantIdentifier) },
            vault: Self.vault, time: charges.clock.source, logger: MandateChargeServiceTests.quiet)
    }

    static let vault = PaymentVault.ephemeral()

    /// An active mandate with a merchant token.
    func mandate(token: String, merchant: String = MandateChargeServiceTests.merchant) async throws -> MandateRecord {
        try await charges.activeMandate(merchant: merchant, merchantToken: token)
    }

    /// The device's side: the newest announcement for `token` opened, and the package fetched with its authentication token.
    func device(_ token: String) throws -> (webServiceURL: String, authenticationToken: String, merchantKey: P384.KeyAgreement.PublicKey) {
        let metadata = try #require(apple.notified.withLock { $0.last { $0.token == token } }?.metadata)
        let merchantKey = try P384.KeyAgreement.PublicKey(x963Representation: try #require(Data(base64Encoded: metadata.merchantPublicKey)))
        #expect(metadata.infoHash == Hex.encode(Array(SHA256.hash(data: UsageInformationSeal.info(merchantTokenIdentifier: token)))))
        let plain = try UsageInformationSeal.open(
            data: metadata.data, ephemeralPublicKey: metadata.ephemeralPublicKey, with: apple.key(token), from: merchantKey,
            merchantTokenIdentifier: token)
        let fields = try JSONDecoder().decode([String: String].self, from: Data(plain))
        return (try #require(fields["webServiceURL"]), try #require(fields["authenticationToken"]), merchantKey)
    }

    func usageInformation(_ package: MerchantTokenUsagePackage, token: String, merchantKey: P384.KeyAgreement.PublicKey) throws
        -> UsageInformation
    {
        let zip = try UsageInformationSeal.open(
            data: package.data, ephemeralPublicKey: package.ephemeralPublicKey, with: apple.key(token), from: merchantKey,
            merchantTokenIdentifier: token)
        let entries = try #require(StoredZip.entries(of: zip))
        #expect(entries.map(\.path) == ["usageInformation.json"], "no image unless configured")
        return try JSONDecoder().decode(UsageInformation.self, from: Data(try #require(entries.first).bytes))
    }

    @Test(
        "a mandate's token is announced once its mandate exists, again after each charge, and the package lists both charges and what comes next"
    )
    func announcedAndServed() async throws {
        let mandate = try await mandate(token: "DNITHE0001")
        #expect(try await service.announceDue() == 1)
        #expect(apple.notified.withLock { $0.count } == 1)
        #expect(try await service.announceDue() == 0, "announced: not due again until before it expires")

        var charging = charges.service
        charging.usage = service
        for (index, key) in ["c-1", "c-2"].enumerated() {
            charges.clock.advance(60)
            _ = try await charging.charge(
                MandateChargeDraft(amount: 990, reference: "inv-\(index)"), mandateId: mandate.id, idempotencyKey: key,
                merchantIdentifier: MandateChargeServiceTests.merchant, logger: MandateChargeServiceTests.quiet)
        }
        #expect(try await service.announceDue() == 1, "two charges close together: announced once")
        let (url, authentication, merchantKey) = try device("DNITHE0001")
        #expect(url == Self.webServiceURL)

        let package = try #require(
            try await service.package(
                merchantTokenIdentifier: "DNITHE0001", authorization: "ApplePayMerchantTokenUsageInformation \(authentication)"))
        #expect(package.data.count <= 4000 && package.ciphersuite == "HPKE_AUTH_P384_SHA384_AES_GCM_256")
        let information = try usageInformation(package, token: "DNITHE0001", merchantKey: merchantKey)
        #expect(information.merchantName == "Orchard Coffee" && information.merchantTokenIdentifier == "DNITHE0001")
        let past = try #require(information.pastPayments)
        #expect(past.count == 3, "the first payment and both charges")
        #expect(past.prefix(2).map(\.totalAmount.amount) == ["9.90", "9.90"] && past.last?.identifier == mandate.paymentId, "newest first")
        #expect(information.pastPayments?.first?.lineItems?.first?.label == "Monthly", "a charge is named by its billing line")
        let recurring = try #require(information.upcomingPayments?.first?.recurringPaymentDetails)
        #expect(recurring.interval == .init(unit: "month", count: 1) && recurring.scheduledPayments?.count == 3)
        #expect(recurring.scheduledPayments?.first?.amount?.amount == "9.90")
        #expect(information.expirationDate == UsageInformationBuilder.instant(charges.clock.source.now.addingTimeInterval(90 * 86_400)))
    }

    @Test("a wrong authentication token, another merchant's token ID, no header or a malformed one: all nil alike")
    func refusedAlike() async throws {
        _ = try await mandate(token: "DNITHE0002")
        _ = try await mandate(token: "DNITHE0003", merchant: "merchant.other")
        #expect(try await service.announceDue() == 2)
        let (_, mine, _) = try device("DNITHE0002")
        let (_, theirs, _) = try device("DNITHE0003")
        let scheme = MerchantTokenUsageService.authorizationScheme
        #expect(try await service.package(merchantTokenIdentifier: "DNITHE0002", authorization: "\(scheme) \(mine)") != nil)
        for (token, header) in [
            ("DNITHE0002", "\(scheme) \(theirs)"), ("DNITHE0003", "\(scheme) \(mine)"), ("DNITHE0002", "\(scheme) wrong"),
            ("DNITHE0002", "Bearer \(mine)"), ("DNITHE0002", mine), ("DNITHE9999", "\(scheme) \(mine)"), ("../x", "\(scheme) \(mine)"),
        ] {
            #expect(try await service.package(merchantTokenIdentifier: token, authorization: header) == nil, "\(token) with \(header)")
        }
        #expect(try await service.package(merchantTokenIdentifier: "DNITHE0002", authorization: nil) == nil)
    }

    @Test("a 202 waits for Apple's new-key event; a 409 is repaired with the token notification URL, then announced")
    func notReadyAndConflict() async throws {
        _ = try await mandate(token: "DNITHE0004")
        apple.mode.withLock { $0 = .notReady }
        _ = try await service.announceDue()
        #expect(apple.notified.withLock { $0.isEmpty })
        #expect(try await charges.store.usageAnnouncements(merchantTokenIdentifier: "DNITHE0004").first?.state == .awaitingKey)

        apple.mode.withLock { $0 = .conflict }
        await service.markDue(merchantIdentifier: MandateChargeServiceTests.merchant, merchantTokenIdentifier: "DNITHE0004")
        _ = try await service.announceDue()
        #expect(
            apple.metadataUpdates.withLock { $0 }
                == ["DNITHE0004 https://pay.shop.example/apple-pay/token-events/\(MandateChargeServiceTests.merchant)"])
        #expect(apple.notified.withLock { $0.count } == 1)
    }

    @Test("Apple unreachable: retried after 30 s, doubling; nothing is lost")
    func retried() async throws {
        _ = try await mandate(token: "DNITHE0005")
        apple.mode.withLock { $0 = .down }
        _ = try await service.announceDue()
        let row = try #require(try await charges.store.usageAnnouncements(merchantTokenIdentifier: "DNITHE0005").first)
        #expect(row.attempts == 1 && row.dueAt == charges.clock.source.now.addingTimeInterval(30) && row.tokenHash == nil)
        apple.mode.withLock { $0 = .ready }
        charges.clock.advance(30)
        #expect(try await service.announceDue() == 1)
        #expect(apple.notified.withLock { $0.count } == 1)
    }

    @Test("rotating the usage key announces every token again, sealed with the new key")
    func rotation() async throws {
        _ = try await mandate(token: "DNITHE0006")
        _ = try await service.announceDue()
        let before = try #require(apple.notified.withLock { $0.last }?.metadata.merchantPublicKey)
        let (key, due) = try await service.rotateKey(merchantIdentifier: MandateChargeServiceTests.merchant)
        #expect(due == 1 && key.id.hasPrefix("uk_"))
        _ = try await service.announceDue()
        let after = try #require(apple.notified.withLock { $0.last }?.metadata.merchantPublicKey)
        #expect(before != after)
        let refusal = await ServiceFixtures.refusal { _ = try await service.rotateKey(merchantIdentifier: "merchant.unknown") }
        #expect(refusal?.code == .notFound)
    }

    @Test("an ended mandate's token is retired: nothing more is announced, and the device gets nil")
    func retiredWhenEnded() async throws {
        let mandate = try await mandate(token: "DNITHE0008")
        _ = try await service.announceDue()
        let (_, authentication, _) = try device("DNITHE0008")
        let header = "\(MerchantTokenUsageService.authorizationScheme) \(authentication)"
        #expect(try await service.package(merchantTokenIdentifier: "DNITHE0008", authorization: header) != nil)

        var lifecycle = MandateLifecycle(
            store: charges.store, processors: PaymentProcessors(fallback: charges.processor), tokens: apple,
            directory: UsageMerchants(merchants: [merchant]), time: charges.clock.source, logger: MandateChargeServiceTests.quiet)
        lifecycle.usage = service
        _ = try await lifecycle.end(mandate, reason: "shop", unlinkAtApple: true)
        #expect(try await service.announceDue() == 1)
        let row = try #require(try await charges.store.usageAnnouncements(merchantTokenIdentifier: "DNITHE0008").first)
        #expect(row.state == .retired && row.dueAt == nil)
        #expect(try await service.package(merchantTokenIdentifier: "DNITHE0008", authorization: header) == nil)
        #expect(apple.notified.withLock { $0.count } == 1, "nothing announced for an ended token")
    }

    @Test("a package past maximumDataCharacters leaves out its oldest past payments")
    func bounded() async throws {
        let usage = try #require(merchant.merchantTokenUsage)
        let mandate = try await mandate(token: "DNITHE0007")
        let order = try #require(try await charges.store.order(id: mandate.orderId))
        let payments = (0..<40).map { index in
            PaymentRecord(
                id: "pay-\(index)", orderId: order.id, transactionId: "tx-\(index)", state: .authorized, amount: 990, currency: "EUR",
                network: "visa", lastFour: "1111", processor: "scripted", reference: "ref-\(index)", mandateId: mandate.id,
                createdAt: ServiceFixtures.start.addingTimeInterval(Double(index) * 86_400))
        }
        let tokenKey = P384.KeyAgreement.PrivateKey()
        var settings = usage
        settings.maximumDataCharacters = 2000
        let sealed = try service.sealPackage(
            [MandateUsage(mandate: mandate, firstOrder: order.priced, payments: payments.reversed())], settings: settings,
            token: "DNITHE0007", tokenKey: tokenKey.publicKey, merchantKey: P384.KeyAgreement.PrivateKey())
        #expect(sealed.data.count <= 2000)
        #expect(sealed.data.count > 1500, "as many as fit, not a few")
    }
}

/// The schedule a recurring agreement charges on, counted from its start in UTC.
@Suite("RecurringSchedule")
struct RecurringScheduleTests {
    static func agreement(start: String?, end: String? = nil, unit: PaymentAgreement.IntervalUnit = .month, count: Int = 1)
        -> PaymentAgreement
    {
        PaymentAgreement(
            type: .recurring, paymentDescription: "Club", managementURL: "https://shop.example",
            regularBilling: .init(label: "Monthly", amount: 990, startDate: start, endDate: end, intervalUnit: unit, intervalCount: count))
    }

    static func days(_ dates: [Date]) -> [String] { dates.map(UsageInformationBuilder.day) }

    @Test("each date from the start: 31 January monthly is 28 February then 31 March, never drifting")
    func monthEnds() throws {
        let schedule = RecurringSchedule(agreement: Self.agreement(start: "2027-01-31T09:00:00Z"), firstPayment: .distantPast)
        let now = try Date("2027-02-01T00:00:00Z", strategy: .iso8601)
        #expect(Self.days(schedule.dates(after: now, limit: 3)) == ["2027-02-28", "2027-03-31", "2027-04-30"])
    }

    @Test("an end stops the dates, and endsWithin says the list holds the last; a minute interval years back is not walked one by one")
    func endsAndBounds() throws {
        let schedule = RecurringSchedule(
            agreement: Self.agreement(start: "2027-01-01T00:00:00Z", end: "2027-03-15T00:00:00Z"), firstPayment: .distantPast)
        let dates = schedule.dates(after: try Date("2027-01-15T00:00:00Z", strategy: .iso8601), limit: 5)
        #expect(Self.days(dates) == ["2027-02-01", "2027-03-01"] && schedule.endsWithin(dates))
        let minutes = RecurringSchedule(agreement: Self.agreement(start: "2000-01-01T00:00:00Z", unit: .minute), firstPayment: .distantPast)
        let now = try Date("2027-06-01T12:00:30Z", strategy: .iso8601)
        #expect(minutes.dates(after: now, limit: 2).map { $0.timeIntervalSince(now) } == [30, 90])
    }

    @Test("without a start, the first payment starts it")
    func fromFirstPayment() throws {
        let first = try Date("2027-05-10T10:00:00Z", strategy: .iso8601)
        let schedule = RecurringSchedule(agreement: Self.agreement(start: nil, unit: .year), firstPayment: first)
        #expect(Self.days(schedule.dates(after: first, limit: 2)) == ["2028-05-10", "2029-05-10"])
    }
}

/// Apple's token API for usage information, in memory: each token's key as the device made it.
final class FakeUsageAPI: MerchantTokenService {
    enum Mode: Sendable { case ready, notReady, conflict, down }

    let mode = Mutex(Mode.ready)
    let keys = Mutex<[String: P384.KeyAgreement.PrivateKey]>([:])
    let notified = Mutex<[(token: String, metadata: MerchantTokenUsageMetadata)]>([])
    let metadataUpdates = Mutex<[String]>([])

    func key(_ token: String) -> P384.KeyAgreement.PrivateKey {
        keys.withLock { keys in
            if let key = keys[token] { return key }
            let key = P384.KeyAgreement.PrivateKey()
            keys[token] = key
            return key
        }
    }

    func event(id: String, for merchant: MerchantConfiguration) async throws(GatewayError) -> MerchantTokenEvent {
        throw GatewayError(.unreachable, "not in this test")
    }

    func unlink(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError) {}

    func publicKey(merchantTokenIdentifier token: String, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> MerchantTokenKeyAnswer
    {
        let repaired = metadataUpdates.withLock { $0.contains { $0.hasPrefix(token + " ") } }
        switch mode.withLock({ $0 }) {
        case .down: throw GatewayError(.unreachable, "Apple is down")
        case .notReady: return .notReady
        case .conflict where !repaired: return .noNotificationURL
        default:
            return .ready(
                publicKey: key(token).publicKey.x963Representation.base64EncodedString(), ciphersuite: UsageInformationSeal.ciphersuite)
        }
    }

    func updateMerchantMetadata(merchantTokenIdentifier token: String, tokenNotificationURL: String, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    {
        metadataUpdates.withLock { $0.append("\(token) \(tokenNotificationURL)") }
    }

    func notify(merchantTokenIdentifier token: String, metadata: MerchantTokenUsageMetadata, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    {
        notified.withLock { $0.append((token, metadata)) }
    }
}

/// The merchants the usage tests know.
struct UsageMerchants: MerchantLookup {
    let merchants: [MerchantConfiguration]
    func merchant(identifier: String) -> MerchantConfiguration? { merchants.first { $0.merchantIdentifier == identifier } }
}
