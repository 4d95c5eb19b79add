import Synchronization

/// What the server is doing: whether it takes traffic (what `/health` answers) and how many
/// requests it is answering (logged by the graceful shutdown). `starting` until the server
/// listens, `ready`, then `draining` once a graceful shutdown begins: a load balancer polling
/// `/health` on a kept-alive connection sees it fail and moves traffic away.
public final class ServerActivity: Sendable {
    public enum State: Int, Sendable {
        case starting, ready, draining

        public var name: String {
            switch self {
            case .starting: "starting"
            case .ready: "ok"
            case .draining: "draining"
            }
        }
    }

    private let value = Atomic<Int>(State.starting.rawValue)
    private let inFlightCount = Atomic<Int>(0)
    private let storeUnavailable = Atomic<Bool>(false)

    public init() {}

    /// The state now.
    public var state: State { State(rawValue: value.load(ordering: .acquiring)) ?? .starting }
    /// True once shutdown began.
    public var isDraining: Bool { state == .draining }
    /// Requests being answered right now.
    public var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    /// False while the last check found the store unreachable (``StoreReadiness``).
    public var storeAvailable: Bool { !storeUnavailable.load(ordering: .acquiring) }

    /// Records a store check; true when it changed the answer.
    @discardableResult
    func storeChecked(available: Bool) -> Bool {
        storeUnavailable.exchange(!available, ordering: .acquiringAndReleasing) == available
    }

    /// Ready, unless draining already began.
    public func markReady() {
        _ = value.compareExchange(expected: State.starting.rawValue, desired: State.ready.rawValue, ordering: .acquiringAndReleasing)
    }

    /// From now on `/health` answers 503 `draining`; never undone.
    public func beginDraining() {
        value.store(State.draining.rawValue, ordering: .releasing)
    }

    public func begin() { inFlightCount.add(1, ordering: .relaxed) }
    public func end() { inFlightCount.subtract(1, ordering: .relaxed) }
}
