import ApplePay
import Crypto
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// Card updates in Apple's token events, in memory: an `UPDATED_*` event's encrypted metadata
/// that verifies and opens records the MPAN's new expiry and last digits with `mandate.updated`
/// and tells the processor; one that does not changes nothing and is logged once.
@Suite("MandateLifecycle: card updates from Apple's encrypted token metadata")
struct MandateCardUpdateTests {
    static let merchant = TestMaterial.merchantIdentifier
    static let token = "DNITHE000000000000000048"
    static let chain = Result { try TestAppleChain.make(now: ServiceFixtures.start) }
    static let processingKey = P256.KeyAgreement.PrivateKey()

    let store = InMemoryStore()
    let clock = TestClock()
    let processor = ExpiryProcessor()
    let apple = OneEventApple()
    let logs = CapturingLogHandler()

    func lifecycle() throws -> MandateLifecycle {
        var merchant = try ServiceFixtures.merchant(Self.merchant, catalogue: nil)
        merchant.processingKeys = [
            try ProcessingKey(privateKeyPEM: Self.processingKey.pemRepresentation, merchantIdentifier: Self.merchant)
        ]
        let logs = self.logs
        return MandateLifecycle(
            store: store, processors: PaymentProcessors(fallback: processor), tokens: apple, directory: OneMerchant(merchant: merchant),
            time: clock.source, logger: Logger(label: "test.card-updates") { _ in logs },
            tokenVerifier: TokenVerifier(root: try Self.chain.get().root.certificate))
    }

    /// Metadata as Apple would send it for this mandate's MPAN, signed `age` seconds before the clock's now.
    func minted(
        expirationDate: String = "301231", mpan: String = "5204240750197840", mpanId: String? = "MPAN-NEW-1", age: TimeInterval = 10,
        chain: TestAppleChain? = nil, to key: P256.KeyAgreement.PublicKey = MandateCardUpdateTests.processingKey.publicKey
    ) throws -> EncryptedTokenMetadata {
        try TokenMinter(chain: chain ?? Self.chain.get()).mintTokenMetadata(
            payload: TokenMinter.tokenMetadataPayload(expirationDate: expirationDate, mpan: mpan, mpanId: mpanId),
            to: key, merchantIdentifier: Self.merchant,
            signingTime: clock.source.now.addingTimeInterval(-age))
    }

    /// An active mandate on ``token``, set up in the move that authorizes its first payment.
    func activeMandate() async throws -> MandateRecord {
        var order = try TestRecords.order("o48")
        order.merchantIdentifier = Self.merchant
        try await store.insert(order)
        let claimed = try await store.claimPayment(TestRecords.claim("o48", transaction: "t48", payment: "p48"))
        let mandate = MandateRecord(
            id: "mdt_48", merchantIdentifier: Self.merchant, kind: .recurring, paymentId: claimed.id, orderId: "o48",
            processor: processor.name, credential: StoredCredential(reference: "cred-48"), merchantTokenIdentifier: Self.token,
            merchantTokenMetadata: .init(cardMetadata: .init(fpanSuffix: "4242")), currency: "EUR", network: "visa", lastFour: "7840",
            description: "Club", createdAt: clock.source.now)
        _ = try await store.transition(
            PaymentTransition(
                paymentId: claimed.id, orderId: "o48", move: PaymentLifecycle.move(.authorized), at: clock.source.now,
                outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-48"), mandate: mandate))
        return try #require(try await store.mandate(id: mandate.id))
    }

    func apply(_ event: MerchantTokenEvent) async throws -> MandateLifecycle.EventFetch {
        apple.event.withLock { $0 = event }
        return try await lifecycle().fetchAndApply(eventId: "evt-48", merchantIdentifier: Self.merchant)
    }

    func updates() async throws -> Int {
        try await store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).filter { $0.type == .mandateUpdated }.count
    }

    @Test("metadata that verifies records the expiry, suffix and MPAN ID with mandate.updated, and the processor is told the expiry")
    func recorded() async throws {
        let mandate = try await activeMandate()
        let art = DecryptedPayment.MerchantTokenMetadata(cardArt: [.init(name: "new", type: "image/png", url: "https://art.example/n.png")])
        let event = MerchantTokenEvent(
            eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: Self.token, merchantTokenMetadata: art,
            encryptedTokenMetadata: try minted(mpan: "5204240750191234"))
        #expect(try await apply(event) == .applied)
        let updated = try #require(try await store.mandate(id: mandate.id))
        let details = try #require(updated.merchantToken)
        #expect(details.expirationDate == "301231" && details.expirationMonth == 12 && details.expirationYear == 2030)
        #expect(details.suffix == "1234" && details.mpanId == "MPAN-NEW-1" && details.updatedAt == clock.source.now)
        #expect(updated.merchantTokenMetadata == art && updated.lastFour == "7840", "lastFour stays the first payment's")
        #expect(try await updates() == 1)
        let payload = try #require(try await store.webhookEvents(merchantIdentifier: nil, state: nil, limit: 50).first?.payload)
        #expect(String(decoding: payload, as: UTF8.self).contains("301231"), "the webhook's mandate shows it")
        #expect(processor.expiries.withLock { $0 } == ["cred-48 12/2030"])
        let logged = logs.records.withLock { $0 }.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!logged.contains("52042407501"), "never the MPAN")

        // A later event with the expiry alone keeps the MPAN identifier; an older one changes no expiry.
        clock.advance(60)
        _ = try await apply(
            MerchantTokenEvent(
                eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: Self.token,
                encryptedTokenMetadata: try minted(expirationDate: "310131", mpanId: nil)))
        let later = try #require(try await store.mandate(id: mandate.id)?.merchantToken)
        #expect(later.expirationDate == "310131" && later.mpanId == "MPAN-NEW-1" && later.suffix == "7840")
        _ = try await apply(
            MerchantTokenEvent(
                eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: Self.token,
                encryptedTokenMetadata: try minted(expirationDate: "291130", age: 3600)))
        #expect(try await store.mandate(id: mandate.id)?.merchantToken == later, "signed before the one recorded")
        #expect(processor.expiries.withLock { $0 } == ["cred-48 12/2030", "cred-48 1/2031"])
    }

    @Test(
        "metadata that does not verify or open changes nothing, card art included, sends no webhook, and is logged once",
        arguments: ["tampered", "other chain", "stale", "other key", "neither key field"])
    func refused(_ fault: String) async throws {
        let mandate = try await activeMandate()
        var metadata: EncryptedTokenMetadata
        switch fault {
        case "tampered":
            metadata = try minted()
            var bytes = try #require(metadata.data.flatMap { Data(base64Encoded: $0) }.map(Array.init))
            bytes[0] ^= 1
            metadata.data = Data(bytes).base64EncodedString()
        case "other chain": metadata = try minted(chain: try TestAppleChain.make(now: ServiceFixtures.start))
        case "stale": metadata = try minted(age: 8 * 86_400)
        case "other key": metadata = try minted(to: P256.KeyAgreement.PrivateKey().publicKey)
        default:
            metadata = try minted()
            metadata.ephemeralPublicKey = nil
        }
        let art = DecryptedPayment.MerchantTokenMetadata(cardArt: [.init(name: "new", type: "image/png", url: "https://art.example/n.png")])
        let event = MerchantTokenEvent(
            eventType: MerchantTokenEvent.updatedCardArt, merchantTokenIdentifier: Self.token, merchantTokenMetadata: art,
            encryptedTokenMetadata: metadata)
        #expect(try await apply(event) == .applied, "not fetched again: it would fail the same way")
        #expect(try await store.mandate(id: mandate.id) == mandate, "nothing changed")
        #expect(try await updates() == 0)
        #expect(processor.expiries.withLock { $0 }.isEmpty)
        let warnings = logs.warnings(containing: "does not verify or open")
        #expect(warnings.count == 1)
        #expect(warnings.first?.metadata["reason"]?.isEmpty == false && warnings.first?.metadata["event"] == "evt-48")
        let logged = logs.records.withLock { $0 }.map { "\($0.message) \($0.metadata)" }.joined(separator: "\n")
        #expect(!logged.contains("52042407501"), "never the MPAN")
    }

    @Test("a processor that does not take the expiry is logged; the mandate keeps what Apple said")
    func processorFailure() async throws {
        let mandate = try await activeMandate()
        processor.fails.withLock { $0 = true }
        _ = try await apply(
            MerchantTokenEvent(
                eventType: MerchantTokenEvent.updatedMetadata, merchantTokenIdentifier: Self.token, encryptedTokenMetadata: try minted()))
        #expect(try await store.mandate(id: mandate.id)?.merchantToken?.expirationDate == "301231")
        #expect(logs.warnings(containing: "did not take the card's new expiry").count == 1)
    }

    @Test("an UNLINK ends the mandate whatever metadata it carries; an update without metadata changes the card art alone")
    func otherEvents() async throws {
        let mandate = try await activeMandate()
        let art = DecryptedPayment.MerchantTokenMetadata(cardArt: [.init(name: "n", type: "image/png", url: "https://art.example/n.png")])
        _ = try await apply(
            MerchantTokenEvent(
                eventType: MerchantTokenEvent.updatedCardArt, merchantTokenIdentifier: Self.token, merchantTokenMetadata: art))
        let updated = try #require(try await store.mandate(id: mandate.id))
        #expect(updated.merchantTokenMetadata == art && updated.merchantToken == nil && processor.expiries.withLock { $0 }.isEmpty)
        _ = try await apply(
            MerchantTokenEvent(
                eventType: MerchantTokenEvent.unlink, merchantTokenIdentifier: Self.token, encryptedTokenMetadata: try minted()))
        let ended = try #require(try await store.mandate(id: mandate.id))
        #expect(ended.state == .ended && ended.merchantToken == nil)
    }
}

/// Apple's gateway answering one event, whatever its ID.
final class OneEventApple: MerchantTokenService {
    let event = Mutex<MerchantTokenEvent?>(nil)

    func event(id: String, for merchant: MerchantConfiguration) async throws(GatewayError) -> MerchantTokenEvent {
        guard let event = event.withLock({ $0 }) else { throw GatewayError(.rejected, "unknown", appleStatus: 404) }
        return event
    }

    func unlink(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError) {}

    // Usage information is MerchantTokenUsageServiceTests' subject (FakeUsageAPI): here Apple is never asked for it.
    func publicKey(merchantTokenIdentifier: String, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> MerchantTokenKeyAnswer
    { .notReady }

    func updateMerchantMetadata(merchantTokenIdentifier: String, tokenNotificationURL: String, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    {}

    func notify(merchantTokenIdentifier: String, metadata: MerchantTokenUsageMetadata, for merchant: MerchantConfiguration)
        async throws(GatewayError)
    {}
}

/// One merchant, found by its identifier.
struct OneMerchant: MerchantLookup {
    let merchant: MerchantConfiguration
    func merchant(identifier: String) -> MerchantConfiguration? { identifier == merchant.merchantIdentifier ? merchant : nil }
}

/// A processor that records the expiries it is told, or refuses them.
final class ExpiryProcessor: PaymentProcessor {
    let name = "expiring"
    let expiries = Mutex<[String]>([])
    let fails = Mutex(false)

    func updateCredentialExpiry(_ mandate: MandateRecord, month: Int, year: Int) async throws(ProcessorActionError) -> Bool {
        if fails.withLock({ $0 }) { throw ProcessorActionError("the processor answered HTTP 500") }
        expiries.withLock { $0.append("\(mandate.credential.reference) \(month)/\(year)") }
        return true
    }

    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome { AuthorizationOutcome(status: .refused) }
    func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome { AuthorizationOutcome(status: .refused) }
    func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {}
    func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] { [:] }
    func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {}
    func refund(_ request: RefundRequest) async throws -> RefundOutcome { RefundOutcome(status: .refused) }
    func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup { .deduplicated(window: nil) }
    func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup { .deduplicated(window: nil) }
}
