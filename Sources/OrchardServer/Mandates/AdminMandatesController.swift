import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `/admin/mandates`: every merchant's mandates for the operator, behind the admin token, and
/// ending one (a shopper who asked the platform rather than the shop, a card reported stolen).
/// Ending goes through the same compare-and-set, processor deletion and Apple unlink as the
/// shop's `DELETE /v1/mandates/{id}`, with the reason `operator`.
struct AdminMandatesController {
    let store: any MandateRecords
    let directory: MerchantDirectory
    /// The merchants the configuration file names (`merchants[].merchantIdentifier`).
    let configuredMerchants: [String]
    let lifecycle: MandateLifecycle

    /// A mandate with the merchant it belongs to, which the shop's own view leaves out.
    struct AdminMandate: ResponseEncodable {
        var merchantIdentifier: String
        var mandate: MandateView

        init(_ record: MandateRecord) {
            merchantIdentifier = record.merchantIdentifier
            mandate = MandateView(record)
        }
    }

    struct AdminMandateList: ResponseEncodable {
        var mandates: [AdminMandate]
    }

    /// Its routes in the `/admin` group, which checks the admin token.
    var routes: RouteCollection<OrchardRequestContext> {
        let admin = RouteCollection(context: OrchardRequestContext.self)
        admin.get("mandates") { request, _ in
            try await list(request.uri.queryParameters)
        }
        admin.get("mandates/{id}") { _, context in
            AdminMandate(try await requireMandate(context))
        }
        admin.post("mandates/{id}/end") { _, context in
            // Already ended (here or by a concurrent call): the answer shows by whom.
            AdminMandate(try await lifecycle.endUnlessEnded(try await requireMandate(context), reason: "operator"))
        }
        return admin
    }

    /// Newest first, across every configured and registered merchant unless `merchant` names one.
    private func list(_ query: Parameters) async throws -> AdminMandateList {
        let state = try query["state"].map { text in
            guard let state = MandateRecord.State(rawValue: String(text)) else {
                throw OrchardError(.invalidRequest, "state must be active or ended")
            }
            return state
        }
        let limit = try query.adminLimit(default: 100)
        let merchants: [String]
        if let merchant = query["merchant"].map(String.init) {
            guard (1...255).contains(merchant.utf8.count) else {
                throw OrchardError(.invalidRequest, "merchant must be a merchant ID (1 to 255 bytes)")
            }
            merchants = [merchant]
        } else {
            merchants =
                configuredMerchants + directory.registrations.map(\.partnerIdentifier)
        }
        var mandates: [MandateRecord] = []
        for merchant in merchants {
            mandates += try await store.mandates(merchantIdentifier: merchant, state: state, limit: limit)
        }
        // Each merchant's list is newest first and at most `limit` long, so the merge is exact.
        mandates.sort { ($0.createdAt, $0.id) > ($1.createdAt, $1.id) }
        return AdminMandateList(mandates: mandates.prefix(limit).map(AdminMandate.init))
    }

    private func requireMandate(_ context: OrchardRequestContext) async throws -> MandateRecord {
        let id = try context.parameters.require("id")
        guard RecordIdentifier.isLookup(id), let mandate = try await store.mandate(id: id) else {
            throw OrchardError(.notFound, "there is no mandate \(id.prefix(64))")
        }
        return mandate
    }
}
