import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Runs ``PaymentsEngine/captureDue(limit:)`` at startup, every `interval`, and at once when
/// an authorization owes an automatic capture (``signal``), until shutdown. What is due lives in
/// the store (each payment's capture due time, written with its authorization), so a capture
/// owed when the process stopped is made after a restart.
public struct PaymentCapturer: Service {
    /// Tells the loop a capture is due now: hand ``signal()`` to ``PaymentsEngine/onCaptureDue``.
    public final class Signal: Sendable {
        let wakeUp = WakeUp()

        public init() {}

        /// Ends the loop's wait at once; several signals before its next pass count as one.
        public func signal() { wakeUp.signal() }
    }

    let engine: PaymentsEngine
    let interval: Duration
    let signal: Signal
    let logger: Logger

    public init(engine: PaymentsEngine, interval: Duration, signal: Signal, logger: Logger) {
        self.engine = engine
        self.interval = interval
        self.signal = signal
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval, wakeUp: signal.wakeUp) {
            let report = await engine.captureDue()
            if report.refused + report.gaveUp > 0 {
                logger.notice(
                    "automatic captures",
                    metadata: [
                        "captured": "\(report.captured)", "refused": "\(report.refused)", "gaveUp": "\(report.gaveUp)",
                        "skipped": "\(report.skipped)",
                    ])
            }
        }
    }
}
