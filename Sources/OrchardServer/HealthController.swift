import ApplePay
import Foundation
import HTTPTypes
import Hummingbird
import OrchardCore
import OrchardServices
import X509

/// `GET /health` for load balancers: only whether this instance takes traffic, for any Host.
/// `GET /admin/health` (admin token): every certificate's days left and the merchants.
struct HealthController {
    /// The configured merchants, whose identities `/admin/health` dates.
    let merchants: [MerchantConfiguration]
    /// Every certificate the configuration loaded.
    let certificates: [ConfiguredCertificate]
    let directory: MerchantDirectory
    let time: TimeSource
    let activity: ServerActivity

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.get("/health") { _, _ in
            // Nothing about certificates or merchants here: this route is public.
            let status = Self.readiness(activity)
            return try Self.json(["status": status], status: status == "ok" ? .ok : .serviceUnavailable)
        }
        return router
    }

    /// `ok` when this instance takes traffic; else why not: `starting`, `draining`, or
    /// `store_unavailable` while its store cannot be reached.
    static func readiness(_ activity: ServerActivity) -> String {
        let state = activity.state
        return state == .ready && !activity.storeAvailable ? "store_unavailable" : state.name
    }

    /// `health` in the `/admin` group, which checks the admin token.
    var adminRoutes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("health") { _, _ in
            try Self.json(detail(), status: .ok)
        }
        return admin
    }

    /// Every certificate's and merchant identity's expiry on the server's clock.
    func detail() -> Detail {
        let now = time.now
        let merchants = self.merchants.map { merchant in
            Detail.Merchant(
                merchantIdentifier: merchant.merchantIdentifier,
                identityCertificate: .init(
                    notValidAfter: merchant.identity.certificate.notValidAfter.formatted(.iso8601),
                    daysLeft: merchant.identity.daysLeft(at: now)))
        }
        let certificates = self.certificates.map { entry in
            Detail.Certificate(
                owner: entry.owner, kind: entry.kind, subject: entry.certificate.subject.description,
                notValidAfter: entry.certificate.notValidAfter.formatted(.iso8601), daysLeft: entry.daysLeft(at: now))
        }
        let expiring = self.certificates.contains { $0.daysLeft(at: now) < GuardPolicy.warningDays[0] }
        return Detail(
            status: expiring ? "certificates_expiring" : "ok", readiness: Self.readiness(activity), merchants: merchants,
            certificates: certificates, registeredMerchants: directory.registrations.count)
    }

    /// `/admin/health`'s body.
    struct Detail: Encodable {
        struct Merchant: Encodable {
            struct Identity: Encodable {
                var notValidAfter: String
                var daysLeft: Int
            }
            var merchantIdentifier: String
            var identityCertificate: Identity
        }
        struct Certificate: Encodable {
            var owner: String
            var kind: String
            var subject: String
            var notValidAfter: String
            var daysLeft: Int
        }
        var status: String
        var readiness: String
        var merchants: [Merchant]
        var certificates: [Certificate]
        var registeredMerchants: Int
    }

    static func json(_ body: some Encodable, status: HTTPResponse.Status) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Response(
            status: status, headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: try encoder.encode(body))))
    }
}
