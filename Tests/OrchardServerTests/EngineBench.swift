import ApplePay
import Crypto
import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardSQLite
import OrchardServer
import OrchardServices
import OrchardTesting
import Synchronization

/// A clock the test moves by hand.
final class ManualClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))

    var now: Date { current.withLock { $0 } }
    var source: TimeSource { TimeSource { [self] in now } }

    func advance(_ seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// The real time plus an offset a test moves forward: the server's loops keep running on real
/// time, while every "now" the server and the mock processors read can jump past a processor's
/// documented lag without sleeping.
final class ShiftedClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    var source: TimeSource { TimeSource { [self] in now } }

    func advance(_ seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}

/// How the processor double answers one request.
enum SimulatedBehaviour: String, CaseIterable, Sendable {
    case authorize, refuse
    /// 503 before anything was charged.
    case serverError
    /// 400 schema or 401 credentials: the request itself refused, nothing charged.
    case badRequest
    /// Charged, then the connection dropped.
    case dropAfterCharge
    /// Charged, but the answer comes after the client's timeout; the reference stays in progress a while.
    case delayPastTimeout
}

/// A processor double with the mock processors' idempotency, in process: one record per
/// reference, the first answer replayed, "in progress" while a slow charge runs (Worldline's
/// 409, which adapters report as no answer, or Worldpay's 400 duplicate, reported as a
/// rejection), and every charge counted.
final class SimulatedProcessor: PaymentProcessor {
    struct Record {
        var authorized: Bool
        var busyUntil: Date
    }

    let name = "worldline"
    let clock: ManualClock
    /// True: "in progress" is a rejection (Worldpay's 400); false: no answer (Worldline's 409).
    let inProgressIsRejection: Atomic<Bool>
    private let state = Mutex<
        (next: [SimulatedBehaviour], byReference: [String: [SimulatedBehaviour]], records: [String: Record], requests: Int)
    >(([], [:], [:], 0))
    private let gate = Mutex<(holding: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

    /// The next request waits, after it arrived, until ``release()``.
    func holdNextRequest() {
        gate.withLock { $0.holding = true }
    }

    /// Whether a held request is waiting.
    var isHolding: Bool { gate.withLock { $0.waiting != nil } }

    func release() {
        gate.withLock { gate in
            gate.holding = false
            gate.waiting?.resume()
            gate.waiting = nil
        }
    }

    init(clock: ManualClock, inProgressIsRejection: Bool) {
        self.clock = clock
        self.inProgressIsRejection = Atomic(inProgressIsRejection)
    }

    /// Queues how the next requests are answered (authorize once the queue is empty).
    func script(_ behaviours: [SimulatedBehaviour]) {
        state.withLock { $0.next += behaviours }
    }

    func clearScript(for reference: String) {
        state.withLock { $0.byReference[reference] = nil }
    }

    /// Queues how the next requests for one reference are answered, before the shared queue.
    func script(_ behaviours: [SimulatedBehaviour], for reference: String) {
        state.withLock { $0.byReference[reference, default: []] += behaviours }
    }

    /// References charged (authorized) at the processor.
    var charges: [String] { state.withLock { $0.records.filter(\.value.authorized).map(\.key).sorted() } }
    var requests: Int { state.withLock { $0.requests } }

    /// What the processor's records say of a reference, as an operator would read them: nil while in progress.
    func operatorView(_ reference: String) -> Bool? {
        state.withLock { state in
            guard let record = state.records[reference] else { return false }
            return record.busyUntil > clock.now ? nil : record.authorized
        }
    }

    func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        var outcome = try await answer(request.reference)
        if request.storeCredential != nil, outcome.status == .authorized, storesCredentials.load(ordering: .relaxed) {
            outcome.storedCredential = StoredCredential(
                reference: "tok-" + request.reference, schemeReference: "scheme-" + request.reference)
        }
        return outcome
    }

    /// Mandate charges follow the same script and idempotency as payments, by reference.
    func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        try await answer(request.reference)
    }

    /// False: authorizes an agreement's first payment without storing the credential.
    let storesCredentials = Atomic(true)

    /// Stored credentials deleted, by reference.
    let deleted = Mutex<[String]>([])

    func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {
        deleted.withLock { $0.append(mandate.credential.reference) }
    }

    private func answer(_ reference: String) async throws -> AuthorizationOutcome {
        if gate.withLock({ $0.holding }) {
            await withCheckedContinuation { continuation in
                gate.withLock { $0.waiting = continuation }
            }
        }
        let now = clock.now
        let (behaviour, record) = state.withLock { state in
            state.requests += 1
            let behaviour: SimulatedBehaviour
            if let own = state.byReference[reference], !own.isEmpty {
                behaviour = own[0]
                state.byReference[reference]?.removeFirst()
            } else {
                behaviour = state.next.isEmpty ? .authorize : state.next.removeFirst()
            }
            return (behaviour, state.records[reference])
        }
        if behaviour == .serverError { throw ProcessorNoAnswer("HTTP 503") }
        if behaviour == .badRequest { return AuthorizationOutcome(status: .failed, code: "bodyDoesNotMatchSchema") }
        if let record {
            if record.busyUntil > now {
                if inProgressIsRejection.load(ordering: .relaxed) {
                    return AuthorizationOutcome(status: .failed, code: "duplicateTransactionReference")
                }
                throw ProcessorNoAnswer("HTTP 409 in progress")
            }
            if behaviour == .dropAfterCharge || behaviour == .delayPastTimeout { throw ProcessorNoAnswer("no answer to a replay") }
            return AuthorizationOutcome(status: record.authorized ? .authorized : .refused, processorReference: reference)
        }
        let authorized = behaviour != .refuse
        let busy = behaviour == .delayPastTimeout ? now.addingTimeInterval(20) : now
        state.withLock { $0.records[reference] = Record(authorized: authorized, busyUntil: busy) }
        switch behaviour {
        case .dropAfterCharge: throw ProcessorNoAnswer("connection reset")
        case .delayPastTimeout: throw ProcessorNoAnswer("timeout")
        default: return AuthorizationOutcome(status: authorized ? .authorized : .refused, processorReference: reference)
        }
    }

    /// Settles and cancels asked of the processor, in order.
    var backOfficeCalls: [String] { actions.withLock { $0 } }
    private let actions = Mutex<[String]>([])

    /// A back-office call: recorded, then held like a request while ``holdNextRequest()`` says so.
    private func act(_ what: String) async {
        actions.withLock { $0.append(what) }
        if gate.withLock({ $0.holding }) {
            await withCheckedContinuation { continuation in gate.withLock { $0.waiting = continuation } }
        }
    }

    func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] {
        await act("settle")
        return ["refund": "https://psp.example/refunds/\(payment.reference)"]
    }
    func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) { await act("cancel") }
    func refund(_ request: RefundRequest) async throws -> RefundOutcome { RefundOutcome(status: .refunded) }

    /// How the processor's records are read for an unknown payment; nil: like the mock processors
    /// over an idempotency key, a re-send is answered from the first send.
    let lookups = Mutex<(@Sendable (PaymentRecord) -> PaymentLookup)?>(nil)

    func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup {
        lookups.withLock { $0 }?(payment) ?? .deduplicated(window: nil)
    }
    func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup { .deduplicated(window: nil) }
}

/// The engine over a store, a processor double and a hand-moved clock. The store is in memory
/// for the engine's rules, or a real SQLite file where a test is about what survives a
/// crash; "restart" makes a new engine on the same store (for SQLite, a new connection to the
/// same file and vault, as a new process would open; nothing the engine held in memory survives).
struct EngineBench: Sendable {
    static let merchant = TestMaterial.merchantIdentifier
    static let catalogue = TestRecords.catalogue

    /// Where the bench keeps its records.
    enum Storage: Sendable {
        /// Plain maps, through the same repository contracts the SQL stores keep.
        case memory
        /// A SQLite file in this folder, reopened at each restart.
        case sqlite(directory: String)
    }

    let storage: Storage
    let clock = ManualClock()
    let vault = PaymentVault.ephemeral()
    let processor: SimulatedProcessor
    let minter = TokenMinter(chain: ServerHarness.tokenChain)
    let policy: PaymentsEngine.Policy
    private let memory = InMemoryStore()
    private(set) var store: ComposedStore
    /// The store's payments: set `failing` and the write of a processor's answer fails.
    private(set) var payments: FailingOrderPayments
    private(set) var engine: PaymentsEngine

    init(_ storage: Storage, inProgressIsRejection: Bool = false, policy: PaymentsEngine.Policy = .init(staleAfter: 30)) throws {
        self.storage = storage
        processor = SimulatedProcessor(clock: clock, inProgressIsRejection: inProgressIsRejection)
        self.policy = policy
        (store, payments) = try Self.open(storage, memory: memory)
        engine = Self.engine(store: store, processor: processor, vault: vault, clock: clock, policy: policy)
    }

    /// The bench's store, its payments behind a decorator that can fail their moves.
    private static func open(_ storage: Storage, memory: InMemoryStore) throws -> (ComposedStore, FailingOrderPayments) {
        let base: any OrchardStore
        switch storage {
        case .memory: base = memory
        case .sqlite(let directory): base = try SQLiteStore(path: directory + "/orchard.sqlite")
        }
        let payments = FailingOrderPayments(base)
        return (ComposedStore(base, orderPayments: payments), payments)
    }

    static func engine(
        store: any OrderPayments & Refunds & MandateRecords, processor: SimulatedProcessor, vault: PaymentVault, clock: ManualClock,
        policy: PaymentsEngine.Policy,
        logHandler: (any LogHandler)? = nil, key: ProcessingKey = orchardHeldKey
    ) -> PaymentsEngine {
        var logger = logHandler.map { handler in Logger(label: "engine-test") { _ in handler } } ?? Logger(label: "engine-test")
        logger.logLevel = logHandler == nil ? .critical : .info
        return PaymentsEngine(
            store: store, processors: PaymentProcessors(byMerchant: [merchant: processor]),
            verifier: TokenVerifier(root: ServerHarness.tokenChain.root.certificate), decryptors: [merchant: TokenDecryptor(keys: [key])],
            vault: vault, time: clock.source, policy: policy, logger: logger)
    }

    /// The bench's processing key, which Orchard holds.
    static let orchardHeldKey = try! ProcessingKey(
        privateKeyPEM: ServerHarness.processingKey.pemRepresentation, merchantIdentifier: merchant)

    /// As after kill -9: a new engine (and, for SQLite, a new store connection on the same file);
    /// nothing the engine held in memory survives. `key` replaces the bench's processing key.
    mutating func restart(logHandler: (any LogHandler)? = nil, key: ProcessingKey = orchardHeldKey) throws {
        (store, payments) = try Self.open(storage, memory: memory)
        engine = Self.engine(
            store: store, processor: processor, vault: vault, clock: clock, policy: policy, logHandler: logHandler, key: key)
    }

    /// An open order of 9.90 EUR.
    func order() async throws -> OrderRecord {
        let id = UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        let priced = try Pricing.price(items: [CartItem(productId: "apple", quantity: 2)], catalogue: Self.catalogue, at: clock.now)
        let order = OrderRecord(
            id: id, merchantIdentifier: Self.merchant, state: .open, priced: priced, applicationData: Array("orchard-order:\(id)".utf8),
            createdAt: clock.now)
        try await store.insert(order)
        return order
    }

    /// A fresh token for the order (a new transaction ID), signed now on the bench's clock.
    func token(for order: OrderRecord, amount: Int = 990) throws -> PaymentToken {
        PaymentToken(
            paymentData: try minter.mintEC(
                payload: TokenMinter.samplePayload(amount: amount), to: ServerHarness.processingKey.publicKey,
                merchantIdentifier: Self.merchant, applicationDataHash: Array(SHA256.hash(data: order.applicationData)),
                signingTime: clock.now))
    }

    /// The shopper taps Pay with a fresh token.
    func tap(_ order: OrderRecord) async throws -> Result<PaymentRecord, CoreError> {
        let token = try token(for: order)
        do {
            return .success(try await engine.authorize(.init(merchantIdentifier: Self.merchant, orderId: order.id, token: token)))
        } catch {
            return .failure(error)
        }
    }
}
