import Synchronization

/// Answers a test keeps back: while held, each is stored instead of sent, and ``release()``
/// sends them all and answers at once again. A call stays in flight for as long as a test needs,
/// instead of for a latency chosen to be long enough.
final class HeldAnswers: Sendable {
    private let answers = Mutex<[@Sendable () -> Void]?>(nil)

    /// From now on, answers are kept.
    func hold() {
        answers.withLock { if $0 == nil { $0 = [] } }
    }

    /// Sends the answers kept, and stops keeping them.
    func release() {
        let kept = answers.withLock { answers in
            defer { answers = nil }
            return answers ?? []
        }
        kept.forEach { $0() }
    }

    /// How many answers are kept now.
    var count: Int {
        answers.withLock { $0?.count ?? 0 }
    }

    /// Keeps `answer` while answers are held; false when they are not (send it now).
    func keep(_ answer: @escaping @Sendable () -> Void) -> Bool {
        answers.withLock { answers in
            guard answers != nil else { return false }
            answers?.append(answer)
            return true
        }
    }
}

extension MockAppleGateway {
    /// Keeps every session answer back from now on, until ``releaseSessions()``.
    public func holdSessions() { heldSessions.hold() }

    /// Sends the session answers kept back, and answers at once again.
    public func releaseSessions() { heldSessions.release() }

    /// Keeps every unregistration call back from now on, unapplied and unanswered, until
    /// ``releaseUnregistrations()``: Apple taking its time while a merchant leaves.
    public func holdUnregistrations() { heldUnregistrations.hold() }

    /// The unregistration calls received and kept back so far: a test waits for one to arrive.
    public var heldUnregistrationCount: Int { heldUnregistrations.count }

    /// Applies and answers the unregistration calls kept back, and answers at once again.
    public func releaseUnregistrations() { heldUnregistrations.release() }

    /// Keeps every registration call back from now on, unapplied and unanswered, until
    /// ``releaseRegistrations()``: Apple taking its time over a `register` (the guard's repair).
    /// ``receivedRegistrationCalls`` lists a call once it is applied, so it keeps Apple's order.
    public func holdRegistrations() { heldRegistrations.hold() }

    /// The registration calls received and kept back so far: a test waits for one to arrive.
    public var heldRegistrationCount: Int { heldRegistrations.count }

    /// Applies and answers the registration calls kept back, and answers at once again.
    public func releaseRegistrations() { heldRegistrations.release() }
}
