import ApplePay
import Foundation
import Hummingbird
import OrchardCore

/// The guard for operators: `GET /admin/guard`, every watched domain, certificate and
/// registration with its state, last check, first failure and advice.
struct AdminGuardController {
    let records: any GuardRecords
    let time: TimeSource

    struct GuardList: ResponseEncodable {
        /// How many records are in each state, for a glance.
        var counts: [String: Int]
        var records: [GuardView]
    }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("guard") { request, _ in
            let query = request.uri.queryParameters
            let state = try query["state"].map { raw in
                guard let state = GuardState(rawValue: String(raw)) else {
                    throw OrchardError(.invalidRequest, "state must be pending, ok, expiring or failing")
                }
                return state
            }
            let now = time.now
            let all = try await records.guardRecords(merchantIdentifier: query["merchant"].map(String.init))
            var counts = Dictionary(uniqueKeysWithValues: GuardState.allCases.map { ($0.rawValue, 0) })
            for record in all { counts[record.state.rawValue, default: 0] += 1 }
            return GuardList(counts: counts, records: all.filter { state == nil || $0.state == state }.map { GuardView($0, at: now) })
        }
        return admin
    }
}
