import ApplePay
import Foundation
import Synchronization

/// A clock the test moves by hand.
public final class ManualClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded(.down)))

    public init() {}

    /// The clock's time: whole seconds, moved only by ``advance(_:)``.
    public var now: Date { current.withLock { $0 } }
    /// The clock as the engine and the server read time.
    public var source: TimeSource { TimeSource { [self] in now } }

    /// Moves the clock forward by `seconds`.
    public func advance(_ seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

/// The real time plus an offset a test moves forward: the server's loops keep running on real
/// time, while every "now" the server and the mock processors read can jump past a processor's
/// documented lag without sleeping.
public final class ShiftedClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    public init() {}

    /// The real time plus the offset moved so far.
    public var now: Date { Date().addingTimeInterval(offset.withLock { $0 }) }
    /// The clock as the server and the mock processors read time.
    public var source: TimeSource { TimeSource { [self] in now } }

    /// Moves the clock's offset forward by `seconds`.
    public func advance(_ seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
