import ApplePay
import Foundation
import Hummingbird
import Logging
import X509

/// `GET /.well-known/apple-developer-merchantid-domain-association`, chosen by Host.
struct DomainAssociationController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory

    func addRoutes(to router: Router<some RequestContext>) {
        router.get("/.well-known/apple-developer-merchantid-domain-association") { request, _ in
            guard let (merchant, _) = directory.merchant(forHost: request.head.authority),
                let file = merchant.domainAssociation
            else {
                throw OrchardError(.notFound, "no domain association file is configured for this host")
            }
            return Response(
                status: .ok,
                headers: [.contentType: "text/plain", .contentLength: String(file.count)],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: file)))
        }
    }
}

/// `POST /api/apple-pay/session`: merchant validation for the page's `onvalidatemerchant`.
struct MerchantSessionController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    let sessions: any MerchantSessionService

    struct Body: Decodable {
        var validationURL: String?
    }

    func addRoutes(to router: Router<some RequestContext>) {
        router.post("/api/apple-pay/session") { request, context in
            try await createSession(request, context: context)
        }
    }

    func createSession(_ request: Request, context: some RequestContext) async throws -> Response {
        // Host first: an unknown host gets nothing, not even a parse of its body.
        guard let (merchant, domain) = directory.merchant(forHost: request.head.authority) else {
            throw OrchardError(.unknownHost, "this host is not configured for Apple Pay")
        }
        let bytes = try await readBody(request, limit: configuration.maxBodyBytes)
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
        let session = try await sessions.createSession(sessionRequest, for: merchant)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json", .cacheControl: "no-store"],
            body: ResponseBody(byteBuffer: ByteBuffer(bytes: session)))
    }
}

/// `GET /health`: liveness, and every certificate's days left.
struct HealthController {
    let configuration: ServerConfiguration
    let directory: MerchantDirectory
    let time: TimeSource

    func addRoutes(to router: Router<some RequestContext>) {
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

/// Reads a request body up to `limit` bytes; larger bodies are a 413.
func readBody(_ request: Request, limit: Int) async throws -> [UInt8] {
    if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
        throw OrchardError(.payloadTooLarge, "the request body is larger than \(limit) bytes")
    }
    var request = request
    do {
        let buffer = try await request.collectBody(upTo: limit)
        return Array(buffer.readableBytesView)
    } catch {
        throw OrchardError(.payloadTooLarge, "the request body is larger than \(limit) bytes")
    }
}
