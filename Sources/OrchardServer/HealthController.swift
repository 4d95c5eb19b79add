import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import X509

/// `GET /health`: liveness, and every certificate's days left.
struct HealthController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    let time: TimeSource

    func addRoutes(to router: Router<OrchardRequestContext>) {
        router.get("/health") { _, _ in
            let now = time.now
            let merchants: [[String: Any]] = configuration.merchants.map { merchant in
                [
                    "merchantIdentifier": merchant.merchantIdentifier,
                    "identityCertificate": [
                        "notValidAfter": merchant.identity.certificate.notValidAfter.formatted(.iso8601),
                        "daysLeft": merchant.identity.daysLeft(at: now),
                    ],
                ]
            }
            let certificates: [[String: Any]] = configuration.certificates.map { entry in
                [
                    "owner": entry.owner, "kind": entry.kind, "subject": entry.certificate.subject.description,
                    "notValidAfter": entry.certificate.notValidAfter.formatted(.iso8601), "daysLeft": entry.daysLeft(at: now),
                ]
            }
            let expiring = configuration.certificates.contains { $0.daysLeft(at: now) < CertificateExpiryMonitor.warningDays }
            let body: [String: Any] = [
                "status": expiring ? "certificates_expiring" : "ok", "merchants": merchants, "certificates": certificates,
                "registeredMerchants": directory.registrations.count,
            ]
            let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
            return Response(
                status: .ok, headers: [.contentType: "application/json", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}
