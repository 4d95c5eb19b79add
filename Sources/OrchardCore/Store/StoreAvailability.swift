import Synchronization

/// What a store's own calls learn about whether it can be reached, as they happen: a call that
/// fails because the database cannot be reached says so at once, and the next call that gets an
/// answer says it is back. `/health` follows it (``OperationalCounting/availability``) as well as
/// the periodic readiness check, so a load balancer stops sending traffic within one failed call
/// rather than at the next check.
public final class StoreAvailability: Sendable {
    private let unavailable = Atomic<Bool>(false)
    private let observer = Mutex<(@Sendable (Bool) -> Void)?>(nil)

    public init() {}

    /// `handler` is called with the new answer on each change (one observer: the server's readiness).
    public func observe(_ handler: @escaping @Sendable (Bool) -> Void) {
        observer.withLock { $0 = handler }
    }

    /// A call got the store's answer (true) or failed because it could not reach it (false).
    public func report(available: Bool) {
        // The common case, no change, is one load.
        guard unavailable.load(ordering: .relaxed) == available else { return }
        guard unavailable.exchange(!available, ordering: .acquiringAndReleasing) == available else { return }
        observer.withLock { $0 }?(available)
    }
}
