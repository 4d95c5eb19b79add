import ApplePay
import Foundation
import Hummingbird
import Logging
import OrchardCore
import OrchardServices

/// `POST /api/apple-pay/session`: merchant validation for the page's `onvalidatemerchant`.
struct MerchantSessionController {
    /// The largest body read (`server.maxBodyBytes`).
    let maxBodyBytes: Int
    let sessions: any MerchantSessionService
    let limiter: RateLimiter

    struct Body: Decodable {
        var validationURL: String?
    }

    /// The routes the router adds.
    var routes: RouteCollection<OrchardRequestContext> {
        let router = RouteCollection(context: OrchardRequestContext.self)
        router.postJSON("/api/apple-pay/session") { request, context in
            try await createSession(request, context: context)
        }
        return router
    }

    func createSession(_ request: Request, context: OrchardRequestContext) async throws -> Response {
        // Host first: an unknown host gets nothing, not even a parse of its body.
        let (merchant, domain) = try context.requireMerchant()
        try limiter.check(.merchantSessions, context: context, merchant: merchant.merchantIdentifier)
        let bytes = try await readBody(request, limit: maxBodyBytes)
        if !bytes.isEmpty {
            let body: Body
            do {
                body = try JSONDecoder().decode(Body.self, from: Data(bytes))
            } catch {
                throw OrchardError(
                    .invalidJSON,
                    "the body must be a JSON object like {\"validationURL\": \"https://apple-pay-gateway.apple.com/paymentservices/startSession\"}"
                )
            }
            if let validationURL = body.validationURL {
                do {
                    _ = try GatewayHosts.validateValidationURL(validationURL)
                } catch {
                    context.logger.warning("refused a validationURL", metadata: ["reason": "\(error.message)"])
                    throw OrchardError(.invalidValidationURL, error.message)
                }
            }
        }
        let sessionRequest: MerchantSessionRequest
        do {
            sessionRequest = try MerchantSessionRequest(
                merchantIdentifier: merchant.merchantIdentifier, displayName: merchant.displayName, domain: domain)
        } catch {
            throw OrchardError(.internalError, error.message)
        }
        let session: [UInt8]
        do {
            session = try await sessions.createSession(sessionRequest, for: merchant)
        } catch {
            throw OrchardError(session: error)
        }
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: session)))
    }
}
