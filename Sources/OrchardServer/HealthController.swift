import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import Synchronization
import X509

/// Whether this instance should get traffic: `starting` until the server listens, `ready`,
/// then `draining` once whoever starts a graceful shutdown calls ``markDraining()``, before the
/// server stops listening, so the load balancer sees `/health` fail and moves traffic away.
public final class Readiness: Sendable {
    public enum State: Int, Sendable {
        case starting, ready, draining

        var name: String {
            switch self {
            case .starting: "starting"
            case .ready: "ok"
            case .draining: "draining"
            }
        }
    }

    private let value = Atomic<Int>(State.starting.rawValue)

    public init() {}

    /// The state now.
    public var state: State { State(rawValue: value.load(ordering: .acquiring)) ?? .starting }

    /// Ready, unless draining already began.
    public func markReady() {
        _ = value.compareExchange(expected: State.starting.rawValue, desired: State.ready.rawValue, ordering: .acquiringAndReleasing)
    }

    /// From now on `/health` answers 503 `draining`.
    public func markDraining() {
        value.store(State.draining.rawValue, ordering: .releasing)
    }
}

/// `GET /health` for load balancers: only whether this instance takes traffic, for any Host.
/// `GET /admin/health` (admin token): every certificate's days left and the merchants.
struct HealthController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    let time: TimeSource
    let readiness: Readiness

    func addRoutes(to router: Router<OrchardRequestContext>, adminToken: AdminToken?) {
        router.get("/health") { _, _ in
            let state = readiness.state
            // Nothing about certificates or merchants here: this route is public.
            return try Self.json(["status": state.name], status: state == .ready ? .ok : .serviceUnavailable)
        }
        guard let adminToken else { return }
        router.group("admin").add(middleware: AdminAuthMiddleware(token: adminToken)).get("health") { _, _ in
            try Self.json(detail(), status: .ok)
        }
    }

    /// Every certificate's and merchant identity's expiry on the server's clock.
    func detail() -> [String: Any] {
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
        return [
            "status": expiring ? "certificates_expiring" : "ok", "readiness": readiness.state.name, "merchants": merchants,
            "certificates": certificates, "registeredMerchants": directory.registrations.count,
        ]
    }

    static func json(_ body: [String: Any], status: HTTPResponse.Status) throws -> Response {
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: data)))
    }
}
