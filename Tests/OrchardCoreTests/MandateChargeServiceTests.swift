import ApplePay
import Foundation
import Logging
import OrchardCore
import OrchardInMemory
import OrchardTesting
import Synchronization
import Testing

/// ``MandateChargeService`` in memory: what a merchant-initiated charge creates, the checks made
/// before anything is, and the Idempotency-Key that makes a retry the same charge (an unknown
/// attempt re-sent under its reference, a decline answered again), never a second one.
@Suite("MandateChargeService: charging a mandate once per Idempotency-Key, in memory")
struct MandateChargeServiceTests {
    static let merchant = "merchant.test"
    static let agreement = PaymentAgreement(
        type: .recurring, paymentDescription: "Coffee club", managementURL: "https://shop.example/account",
        regularBilling: .init(label: "Monthly", amount: 990))
    static let quiet = Logger(label: "test.mandates") { _ in SwiftLogNoOpLogHandler() }

    let store = InMemoryStore()
    let clock = TestClock()
    let processor = ChargingProcessor()
    let engine: PaymentsEngine

    init() {
        engine = PaymentsEngine(
            orderPayments: store, refunds: store, mandates: store, processors: PaymentProcessors(fallback: processor),
            verifier: TokenVerifier(), decryptors: [:],
            vault: .ephemeral(), time: clock.source, logger: Self.quiet)
    }

    var service: MandateChargeService {
        MandateChargeService(
            mandates: store, paymentRequests: store, orderPayments: store, engine: engine, time: clock.source)
    }

    func charge(_ draft: MandateChargeDraft, _ mandate: MandateRecord, key: String, merchant: String = Self.merchant) async throws -> (
        view: MandateChargeView, created: Bool
    ) {
        try await service.charge(draft, mandateId: mandate.id, idempotencyKey: key, merchantIdentifier: merchant, logger: Self.quiet)
    }

    /// An active mandate set up the way the engine sets one up: in the move that authorizes the
    /// first payment of an order with the agreement.
    func activeMandate(merchant: String = Self.merchant, merchantToken: String? = nil) async throws -> MandateRecord {
        var order = try TestRecords.order("sub" + RecordIdentifier.random().prefix(16))
        order.merchantIdentifier = merchant
        order.priced.agreement = Self.agreement
        try await store.insert(order)
        let payment = "pay" + RecordIdentifier.random().prefix(16)
        let draft = PaymentRecord(
            id: payment, orderId: order.id, transactionId: "tx-\(payment)", state: .pending, amount: order.priced.total, currency: "EUR",
            network: "visa", lastFour: "1111", processor: processor.name, reference: "", createdAt: clock.source.now)
        _ = try await store.claimPayment(
            PaymentClaim(draft: draft, transactionId: draft.transactionId, sealedRequest: [1], priceVersion: order.priceVersion))
        let mandate = MandateRecord(
            id: MandateRecord.newIdentifier(), merchantIdentifier: merchant, kind: .recurring, paymentId: payment, orderId: order.id,
            processor: processor.name, credential: StoredCredential(reference: "tok-\(payment)"), merchantTokenIdentifier: merchantToken,
            merchantTokenMetadata: nil, currency: "EUR", network: "visa", lastFour: "1111", description: "Coffee club",
            createdAt: clock.source.now)
        _ = try await store.transition(
            PaymentTransition(
                paymentId: payment, orderId: order.id, move: PaymentLifecycle.move(.authorized), at: clock.source.now,
                outcome: AuthorizationOutcome(status: .authorized, processorReference: "psp-\(payment)"), mandate: mandate))
        return try #require(try await store.mandate(id: mandate.id))
    }

    @Test("a charge is a payment request of its own with an open order for the amount, paid by the mandate; a retry answers it")
    func charged() async throws {
        let mandate = try await activeMandate()
        let draft = MandateChargeDraft(amount: 990, reference: "inv-1", metadata: ["period": "2027-01"])
        let (view, created) = try await charge(draft, mandate, key: "key-1")
        #expect(created && view.payment.state == .authorized && view.payment.amount == 990 && view.payment.currency == "EUR")
        #expect(view.payment.reference == "inv-1" && view.payment.metadata == ["period": "2027-01"] && view.mandate.id == mandate.id)

        let order = try #require(try await store.order(id: view.payment.paymentRequestId))
        #expect(order.priced.total == 990 && order.merchantIdentifier == Self.merchant && order.state == .paid)
        #expect(order.applicationData == Array("orchard-charge:\(order.id)".utf8), "not a shopper's orchard-order binding")
        #expect(order.expiresAt == ServiceFixtures.start.addingTimeInterval(MandateChargeService.chargeOpenFor))
        let request = try #require(try await store.paymentRequest(id: order.id))
        let fingerprint = try draft.fingerprint(mandateId: mandate.id)
        #expect(request.idempotencyKey == "mandate-charge:key-1" && request.fingerprint == fingerprint)
        #expect(processor.charged == ["\(order.id)-1"])

        let again = try await charge(draft, mandate, key: "key-1")
        #expect(!again.created && again.view.payment.id == view.payment.id && processor.sends == 1, "answered, not sent again")
    }

    @Test("the same key with another body, or for another mandate, is refused; another key is another charge")
    func idempotency() async throws {
        let mandate = try await activeMandate()
        let other = try await activeMandate()
        _ = try await charge(MandateChargeDraft(amount: 500, reference: "inv-2"), mandate, key: "key-2")
        let reused: [(MandateChargeDraft, MandateRecord)] = [
            (MandateChargeDraft(amount: 501, reference: "inv-2"), mandate), (MandateChargeDraft(amount: 500, reference: "inv-2"), other),
        ]
        for (draft, target) in reused {
            let refusal = await ServiceFixtures.refusal { _ = try await charge(draft, target, key: "key-2") }
            #expect(refusal == CoreError(.idempotencyMismatch, "this Idempotency-Key was used for another charge or body"))
        }
        let second = try await charge(MandateChargeDraft(amount: 500, reference: "inv-2"), mandate, key: "key-3")
        #expect(second.created && processor.sends == 2)
    }

    @Test("a charge whose answer is lost is unknown; the retry under the same key re-sends its reference and charges once")
    func unknownRetried() async throws {
        let mandate = try await activeMandate()
        let draft = MandateChargeDraft(amount: 990, reference: "inv-3")
        processor.script([.dropAfterCharge])
        do {
            _ = try await charge(draft, mandate, key: "key-4")
            Issue.record("a lost answer is no answer")
        } catch let error as CoreError {
            #expect(error.code == .paymentUnknown)
        }
        let (view, created) = try await charge(draft, mandate, key: "key-4")
        #expect(!created && view.payment.state == .authorized && processor.sends == 2)
        #expect(processor.charged == ["\(view.payment.paymentRequestId)-1"], "one reference, charged once")
    }

    @Test("a declined charge is final for its key: the retry answers the decline without a call")
    func declined() async throws {
        let mandate = try await activeMandate()
        let draft = MandateChargeDraft(amount: 990, reference: "inv-4")
        processor.script([.refuse])
        for _ in 0..<2 {
            do {
                _ = try await charge(draft, mandate, key: "key-5")
                Issue.record("a decline is refused")
            } catch let error as CoreError {
                #expect(error.code == .declined)
            }
        }
        #expect(processor.sends == 1 && processor.charged.isEmpty)
    }

    @Test("bad input, an unknown or another merchant's mandate, an ended one, or an amount above the agreement: refused, nothing made")
    func refusals() async throws {
        let mandate = try await activeMandate()
        let theirs = try await activeMandate(merchant: "merchant.other")
        let cases: [(MandateChargeDraft, MandateRecord, CoreError.Code)] = [
            (MandateChargeDraft(amount: 0, reference: "inv"), mandate, .invalidRequest),
            (MandateChargeDraft(amount: ShopCart.maximumAmount + 1, reference: "inv"), mandate, .invalidRequest),
            (MandateChargeDraft(amount: 100, reference: ""), mandate, .invalidRequest),
            (MandateChargeDraft(amount: 100, reference: "inv", metadata: ["": "x"]), mandate, .invalidRequest),
            (MandateChargeDraft(amount: 991, reference: "inv"), mandate, .invalidRequest),
            (MandateChargeDraft(amount: 991, reference: "inv", allowAmountAbove: .init(reason: " ")), mandate, .invalidRequest),
            (MandateChargeDraft(amount: 100, reference: "inv"), theirs, .notFound),
        ]
        for (draft, target, code) in cases {
            #expect(await ServiceFixtures.refusal { _ = try await charge(draft, target, key: "key-6") }?.code == code, "\(draft)")
        }
        #expect(processor.sends == 0)
        // Nothing was stored under the key: the same key now makes a charge (above the agreement, with a reason).
        let above = MandateChargeDraft(amount: 1500, reference: "inv", allowAmountAbove: .init(reason: "price change notified"))
        #expect(try await charge(above, mandate, key: "key-6").created)

        let lifecycle = MandateLifecycle(
            store: store, processors: PaymentProcessors(fallback: processor), tokens: nil, directory: NoMerchants(), time: clock.source,
            logger: Self.quiet)
        let ended = try await lifecycle.endUnlessEnded(mandate, reason: "shop")
        #expect(ended.state == .ended && ended.endedReason == "shop" && processor.deleted == [mandate.credential.reference])
        let again = try await lifecycle.endUnlessEnded(mandate, reason: "operator")
        #expect(again.endedReason == "shop" && processor.deleted.count == 1, "already ended: answered as it stands")
        let refusal = await ServiceFixtures.refusal {
            _ = try await charge(MandateChargeDraft(amount: 100, reference: "inv"), ended, key: "key-7")
        }
        #expect(refusal == CoreError(.invalidState, "the mandate has ended (shop): it cannot be charged"))
    }
}

/// No merchant to reach at Apple: the mandates here have no merchant token to unlink.
struct NoMerchants: MerchantLookup {
    func merchant(identifier: String) -> MerchantConfiguration? { nil }
}

/// A processor in memory that keeps one record per reference, as the real ones' idempotency
/// does: a re-send of a reference is answered from its first send, never charged again.
final class ChargingProcessor: PaymentProcessor {
    enum Behaviour { case authorize, refuse, dropAfterCharge }

    let name = "scripted"
    private let state = Mutex<(script: [Behaviour], records: [String: Bool], sends: Int, deleted: [String])>(([], [:], 0, []))

    func script(_ behaviours: [Behaviour]) { state.withLock { $0.script += behaviours } }
    /// References the processor charged.
    var charged: [String] { state.withLock { $0.records.filter(\.value).map(\.key).sorted() } }
    var sends: Int { state.withLock { $0.sends } }
    var deleted: [String] { state.withLock { $0.deleted } }

    func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        let (authorized, answered) = state.withLock { state -> (Bool, Bool) in
            state.sends += 1
            if let earlier = state.records[request.reference] { return (earlier, true) }
            let behaviour = state.script.isEmpty ? .authorize : state.script.removeFirst()
            state.records[request.reference] = behaviour != .refuse
            return (behaviour != .refuse, behaviour != .dropAfterCharge)
        }
        guard answered else { throw ProcessorNoAnswer("the connection dropped after the charge") }
        return AuthorizationOutcome(status: authorized ? .authorized : .refused, processorReference: "psp-\(request.reference)")
    }

    /// The processor answers a re-send from the first send: re-sending is always safe.
    func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup { .deduplicated(window: nil) }

    func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {
        state.withLock { $0.deleted.append(mandate.credential.reference) }
    }

    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome { AuthorizationOutcome(status: .refused) }
    func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] { [:] }
    func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {}
    func refund(_ request: RefundRequest) async throws -> RefundOutcome { RefundOutcome(status: .refused) }
    func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup { .deduplicated(window: nil) }
}
