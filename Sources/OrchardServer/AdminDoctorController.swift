import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// `/admin/doctor`: what loading the configuration cannot prove (merchant IDs, association
/// files, keys' publicKeyHash) and, with `live=true`, Apple's answer for each domain.
struct AdminDoctorController {
    let configuration: ServerConfiguration
    /// For `?live=true` and `?domains=true`.
    let sessions: any MerchantSessionService
    let domainProbe: (any DomainProbe)?
    /// Tells this server's own association file among the domains' answers.
    let signer: DomainFileSigner
    let time: TimeSource

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("doctor") { request, _ in
            let query = request.uri.queryParameters
            return await Doctor(
                sessions: query.get("live") == "true" ? sessions : nil, probe: query.get("domains") == "true" ? domainProbe : nil,
                signer: signer, time: time
            ).check(configuration: configuration)
        }
        return admin
    }
}
