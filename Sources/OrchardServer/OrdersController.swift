import ApplePay
import Foundation
import Hummingbird
import OrchardCore
import OrchardServices

/// `POST /api/orders` and the updates the Apple Pay sheet asks for, on the `Host`'s merchant:
/// the bodies decoded and the rates limited here, every rule in ``OrderService``.
struct OrdersController {
    let service: OrderService
    let limiter: RateLimiter

    struct CreateBody: Decodable { var items: [CartItem] }
    /// What Apple Pay reveals of the address before payment.
    struct ShippingContactBody: Decodable {
        var countryCode: String?
        var postalCode: String?
        var locality: String?
        var administrativeArea: String?
    }
    struct ShippingMethodBody: Decodable { var identifier: String }
    struct CouponBody: Decodable { var couponCode: String }
    struct PaymentMethodBody: Decodable { var type: String? }

    struct Created: ResponseEncodable {
        var orderId: String
        /// The order's price version: a Google Pay payment names the version its sheet showed.
        var priceVersion: Int
        var paymentRequest: ApplePayPaymentRequest
    }

    var routes: RouteCollection<OrchardRequestContext> {
        let routes = RouteCollection(context: OrchardRequestContext.self)
        routes.postJSON("/api/orders") { request, context in try await create(request, context: context) }
        routes.postJSON("/api/orders/{id}/shipping-contact") { request, context in
            try await update(request, context, as: ShippingContactBody.self) {
                .shippingContact(
                    countryCode: $0.countryCode, postalCode: $0.postalCode, locality: $0.locality, administrativeArea: $0.administrativeArea
                )
            }
        }
        routes.postJSON("/api/orders/{id}/shipping-method") { request, context in
            try await update(request, context, as: ShippingMethodBody.self) { .shippingMethod($0.identifier) }
        }
        routes.postJSON("/api/orders/{id}/coupon") { request, context in
            try await update(request, context, as: CouponBody.self) { .coupon($0.couponCode) }
        }
        routes.postJSON("/api/orders/{id}/payment-method") { request, context in
            try await update(request, context, as: PaymentMethodBody.self) { _ in .paymentMethod }
        }
        return routes
    }

    func create(_ request: Request, context: OrchardRequestContext) async throws -> EditedResponse<Created> {
        let (merchant, _) = try context.requireMerchant()
        // A shop without a catalogue answers 404 before a rate-limit token is spent on it.
        _ = try OrderService.catalogue(of: merchant)
        try limiter.check(.orders, context: context, merchant: merchant.merchantIdentifier)
        let body = try await request.decode(as: CreateBody.self, context: context)
        let created = try await service.create(items: body.items, merchant: merchant)
        return EditedResponse(
            status: .created,
            response: Created(
                orderId: created.order.id, priceVersion: created.order.priceVersion, paymentRequest: created.paymentRequest))
    }

    /// Each sheet update may ask the shop's quote URL: limited per shopper's address and per
    /// merchant before anything is read or asked.
    func update<Body: Decodable>(
        _ request: Request, _ context: OrchardRequestContext, as body: Body.Type, event: (Body) -> SheetEvent
    ) async throws -> ApplePayUpdate {
        let (merchant, _) = try context.requireMerchant()
        try limiter.check(.orderUpdates, context: context, merchant: merchant.merchantIdentifier)
        let body = try await request.decode(as: Body.self, context: context)
        return try await service.update(orderId: try context.parameters.require("id"), merchant: merchant, event: event(body))
    }
}
