import Hummingbird
import OrchardServices

/// `/admin/doctor`: `orchard doctor`'s report for the running configuration (the store, the
/// vault key, merchant IDs, association files, keys' publicKeyHash, the platform integrator)
/// and, with `live=true`, Apple's answer for each domain.
struct AdminDoctorController {
    /// The composition root's doctor, which holds the configuration it checks.
    let doctor: DoctorRun

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("doctor") { request, _ in
            let query = request.uri.queryParameters
            return await doctor(query.get("live") == "true", query.get("domains") == "true")
        }
        return admin
    }
}

extension DoctorReport: ResponseEncodable {}
