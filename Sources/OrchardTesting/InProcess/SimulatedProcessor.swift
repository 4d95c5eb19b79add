import ApplePay
import Foundation
import OrchardCore
import Synchronization

/// How the processor double answers one request.
public enum SimulatedBehaviour: String, CaseIterable, Sendable {
    /// Authorized, or refused (declined), on a first send.
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
public final class SimulatedProcessor: PaymentProcessor {
    /// What the processor keeps of one reference.
    struct Record {
        var authorized: Bool
        var busyUntil: Date
    }

    public let name = "worldline"
    /// The clock the processor reads: a charge stays in progress until it passes `busyUntil`.
    public let clock: ManualClock
    /// True: "in progress" is a rejection (Worldpay's 400); false: no answer (Worldline's 409).
    public let inProgressIsRejection: Atomic<Bool>
    private let state = Mutex<
        (next: [SimulatedBehaviour], byReference: [String: [SimulatedBehaviour]], records: [String: Record], requests: Int)
    >(([], [:], [:], 0))
    private let gate = Mutex<(holding: Bool, waiting: CheckedContinuation<Void, Never>?)>((false, nil))

    /// The next request waits, after it arrived, until ``release()``.
    public func holdNextRequest() {
        gate.withLock { $0.holding = true }
    }

    /// Whether a held request is waiting.
    public var isHolding: Bool { gate.withLock { $0.waiting != nil } }

    /// Lets the held request go on.
    public func release() {
        gate.withLock { gate in
            gate.holding = false
            gate.waiting?.resume()
            gate.waiting = nil
        }
    }

    /// A processor with no records, authorizing every request until scripted otherwise.
    public init(clock: ManualClock, inProgressIsRejection: Bool) {
        self.clock = clock
        self.inProgressIsRejection = Atomic(inProgressIsRejection)
    }

    /// Queues how the next requests are answered (authorize once the queue is empty).
    public func script(_ behaviours: [SimulatedBehaviour]) {
        state.withLock { $0.next += behaviours }
    }

    /// Forgets what was queued for one reference.
    public func clearScript(for reference: String) {
        state.withLock { $0.byReference[reference] = nil }
    }

    /// Queues how the next requests for one reference are answered, before the shared queue.
    public func script(_ behaviours: [SimulatedBehaviour], for reference: String) {
        state.withLock { $0.byReference[reference, default: []] += behaviours }
    }

    /// References charged (authorized) at the processor.
    public var charges: [String] { state.withLock { $0.records.filter(\.value.authorized).map(\.key).sorted() } }
    /// Requests received (authorizations and mandate charges), answered or not.
    public var requests: Int { state.withLock { $0.requests } }

    /// What the processor's records say of a reference, as an operator would read them: nil while in progress.
    public func operatorView(_ reference: String) -> Bool? {
        state.withLock { state in
            guard let record = state.records[reference] else { return false }
            return record.busyUntil > clock.now ? nil : record.authorized
        }
    }

    /// Answers as scripted; stores a credential for an agreement's first payment while ``storesCredentials``.
    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        var outcome = try await answer(request.reference)
        if request.storeCredential != nil, outcome.status == .authorized, storesCredentials.load(ordering: .relaxed) {
            outcome.storedCredential = StoredCredential(
                reference: "tok-" + request.reference, schemeReference: "scheme-" + request.reference)
        }
        return outcome
    }

    /// Mandate charges follow the same script and idempotency as payments, by reference.
    public func chargeMandate(_ request: MandateChargeRequest) async throws -> AuthorizationOutcome {
        try await answer(request.reference)
    }

    /// False: authorizes an agreement's first payment without storing the credential.
    public let storesCredentials = Atomic(true)

    /// Stored credentials deleted, by reference.
    public let deleted = Mutex<[String]>([])

    /// Recorded in ``deleted``.
    public func deleteCredential(_ mandate: MandateRecord) async throws(ProcessorActionError) {
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
    public var backOfficeCalls: [String] { actions.withLock { $0 } }
    private let actions = Mutex<[String]>([])

    /// A back-office call: recorded, then held like a request while ``holdNextRequest()`` says so.
    private func act(_ what: String) async {
        actions.withLock { $0.append(what) }
        if gate.withLock({ $0.holding }) {
            await withCheckedContinuation { continuation in gate.withLock { $0.waiting = continuation } }
        }
    }

    /// What each accepted settle captured, in order.
    public let captures = Mutex<[Int64]>([])

    /// Part of the amount: recorded as a settle, and what it captured.
    public func settle(_ payment: PaymentRecord, amount: Int64) async throws(ProcessorActionError) -> [String: String] {
        var part = payment
        part.amount = amount
        return try await settle(part)
    }

    /// How many of the next settles are refused (each is recorded first, as one the processor saw).
    public let settleRefusals = Mutex<Int>(0)
    /// How many of the next settles get no definite answer (a timeout, a 5xx): each is recorded
    /// first, and makes the capture, as one whose answer was lost.
    public let settleNoAnswers = Mutex<Int>(0)

    /// Recorded; answers with a refund link, or refuses while ``settleRefusals`` says so.
    public func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] {
        await act("settle")
        let refuse = settleRefusals.withLock { refusals in
            defer { refusals = max(0, refusals - 1) }
            return refusals > 0
        }
        if refuse { throw ProcessorActionError("capture refused (simulated)") }
        captures.withLock { $0.append(payment.amount) }
        let lost = settleNoAnswers.withLock { lost in
            defer { lost = max(0, lost - 1) }
            return lost > 0
        }
        if lost { throw ProcessorActionError("no answer (simulated)", definite: false) }
        return ["refund": "https://psp.example/refunds/\(payment.reference)"]
    }
    /// Recorded.
    public func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) { await act("cancel") }
    /// Always refunded.
    public func refund(_ request: RefundRequest) async throws -> RefundOutcome { RefundOutcome(status: .refunded) }

    /// How the processor's records are read for an unknown payment; nil: like the mock processors
    /// over an idempotency key, a re-send is answered from the first send.
    public let lookups = Mutex<(@Sendable (PaymentRecord) -> PaymentLookup)?>(nil)

    /// As ``lookups`` says; by default, deduplicated.
    public func lookup(_ payment: PaymentRecord) async throws -> PaymentLookup {
        lookups.withLock { $0 }?(payment) ?? .deduplicated(window: nil)
    }
    /// Deduplicated: a re-sent refund is answered from the first send.
    public func lookupRefund(_ refund: RefundRecord, of payment: PaymentRecord) async throws -> RefundLookup { .deduplicated(window: nil) }
}
