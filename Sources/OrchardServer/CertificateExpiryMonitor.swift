import ApplePay
import Foundation
import Logging
import ServiceLifecycle
import X509

/// Logs a warning for every certificate with fewer than `warningDays` left: once at
/// startup, then every `interval` (a day in production), on the injected clock.
public struct CertificateExpiryMonitor: Service {
    public static let warningDays = 30

    let certificates: [ConfiguredCertificate]
    let time: TimeSource
    let interval: Duration
    let logger: Logger

    public init(certificates: [ConfiguredCertificate], time: TimeSource, interval: Duration, logger: Logger) {
        self.certificates = certificates
        self.time = time
        self.interval = interval
        self.logger = logger
    }

    /// Checks until the server shuts down; shutdown is a normal end, not an error.
    public func run() async throws {
        await repeatUntilShutdown(every: interval) { check() }
    }

    /// The certificates it warned about.
    @discardableResult
    public func check() -> [ConfiguredCertificate] {
        let now = time.now
        let expiring = certificates.filter { $0.daysLeft(at: now) < Self.warningDays }
        for certificate in expiring {
            logger.warning(
                "certificate expires soon: renew it in the Apple Developer portal",
                metadata: [
                    "owner": "\(certificate.owner)", "kind": "\(certificate.kind)",
                    "notValidAfter": "\(certificate.certificate.notValidAfter.formatted(.iso8601))",
                    "daysLeft": "\(certificate.daysLeft(at: now))",
                ])
        }
        return expiring
    }
}
