import Foundation
import Logging
import OrchardCore
import ServiceLifecycle

/// Runs ``PaymentsEngine/reconcile(limit:)`` at startup and then every `interval`, until shutdown.
/// Its schedule lives in the store (each unknown payment's next re-send), so it survives restarts.
public struct PaymentReconciler: Service {
    let engine: PaymentsEngine
    let interval: Duration
    let logger: Logger

    public init(engine: PaymentsEngine, interval: Duration, logger: Logger) {
        self.engine = engine
        self.interval = interval
        self.logger = logger
    }

    public func run() async throws {
        await repeatUntilShutdown(every: interval) {
            let report = await engine.reconcile()
            if report != PaymentsEngine.ReconcileReport() {
                logger.notice(
                    "payments reconciled",
                    metadata: [
                        "stale": "\(report.stale)", "resent": "\(report.resent)", "resolved": "\(report.resolved)",
                        "needOperator": "\(report.needOperator)", "refundsResent": "\(report.refundsResent)",
                        "refundsResolved": "\(report.refundsResolved)", "settledByQuery": "\(report.settledByQuery)",
                        "waiting": "\(report.waiting)",
                    ])
            }
        }
    }
}
