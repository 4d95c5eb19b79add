import Foundation
import Hummingbird
import OrchardCore

/// `/v1/mandates`: the mandates a merchant's agreements set up, merchant-initiated charges of
/// them, and ending them. Decoding here; the rules in ``MandateChargeService`` and
/// ``MandateLifecycle``. Another merchant's mandate is "not found".
struct MandatesController {
    let service: MandateChargeService
    let lifecycle: MandateLifecycle
    let walletOrders: WalletOrderService?

    struct MandateList: ResponseEncodable {
        var mandates: [MandateView]
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let v1 = RouteCollection(context: OrchardRequestContext.self)
        v1.get("mandates") { request, context in
            let merchant = try context.requireAPIMerchant()
            let state = try request.uri.queryParameters["state"].map { text in
                guard let state = MandateRecord.State(rawValue: String(text)) else {
                    throw OrchardError(.invalidRequest, "state must be active or ended")
                }
                return state
            }
            let mandates = try await service.mandates(merchantIdentifier: merchant.merchantIdentifier, state: state)
            return MandateList(mandates: mandates.map(MandateView.init))
        }
        v1.get("mandates/{id}") { _, context in
            MandateView(try await requireMandate(context))
        }
        v1.postJSON("mandates/{id}/charges") { request, context in
            let merchant = try context.requireAPIMerchant()
            let key = try idempotencyKey(request)
            let draft = try await request.decode(as: MandateChargeDraft.self, context: context)
            var (view, created) = try await service.charge(
                draft, mandateId: try context.parameters.require("id"), idempotencyKey: key,
                merchantIdentifier: merchant.merchantIdentifier, logger: context.logger)
            if created {
                view.orderDetails = await walletOrders?.issue(
                    paymentId: view.payment.id, merchantIdentifier: merchant.merchantIdentifier, mandateCharge: true)
            }
            return EditedResponse(status: created ? .created : .ok, response: view)
        }
        v1.delete("mandates/{id}") { _, context in
            MandateView(try await lifecycle.endUnlessEnded(try await requireMandate(context), reason: "shop"))
        }
        return v1
    }

    func requireMandate(_ context: OrchardRequestContext) async throws -> MandateRecord {
        let merchant = try context.requireAPIMerchant()
        return try await service.mandate(id: try context.parameters.require("id"), merchantIdentifier: merchant.merchantIdentifier)
    }
}

extension MandateView: ResponseEncodable {}
extension MandateChargeView: ResponseEncodable {}
