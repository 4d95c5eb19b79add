import ApplePay
import CurlClient
import Foundation
import Logging
import OrchardCore

/// Calls the Web Merchant Registration API over mutual TLS with the platform integrator's
/// identity, through the same libcurl client (and connection pool) as merchant sessions.
public struct AppleRegistrationClient: MerchantRegistrationService {
    let connection: AppleGatewayConnection
    let platform: MerchantConfiguration
    let logger: Logger

    /// - Parameters:
    ///   - endpoint: Apple's gateway origin, or a test gateway.
    ///   - platform: the platform integrator, whose identity signs every call.
    public init(http: CurlHTTPClient, endpoint: RemoteEndpoint, platform: MerchantConfiguration, logger: Logger) {
        self.connection = AppleGatewayConnection(http: http, endpoint: endpoint)
        self.platform = platform
        self.logger = logger
    }

    public func register(_ registration: MerchantRegistration) async throws(GatewayError) {
        _ = try await call("POST", "/registerMerchant", body: registration, what: "register")
    }

    public func unregister(_ unregistration: MerchantUnregistration) async throws(GatewayError) {
        _ = try await call("POST", "/unregisterMerchant", body: unregistration, what: "unregister")
    }

    public func details(partnerIdentifier: String) async throws(GatewayError) -> RegisteredMerchantDetails {
        let path = "/merchant/" + (partnerIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? "")
        let body = try await call("GET", path, body: nil as MerchantRegistration?, what: "details")
        do {
            return try JSONDecoder().decode(RegisteredMerchantDetails.self, from: Data(body))
        } catch {
            throw GatewayError(.unreadable, "Apple's merchant details could not be read")
        }
    }

    private func call(_ method: String, _ path: String, body: (some Encodable)?, what: String) async throws(GatewayError) -> [UInt8] {
        var bytes: [UInt8]?
        if let body {
            do {
                bytes = Array(try JSONEncoder().encode(body))
            } catch {
                throw GatewayError(.invalidRequest, "cannot encode the registration request")
            }
        }
        let response: CurlResponse
        do {
            response = try await connection.send(
                method, path: "/paymentservices" + path, body: bytes, identity: platform.identity, call: "registration")
        } catch {
            logger.error("merchant registration call failed", metadata: ["call": "\(what)", "error": "\(error.message)"])
            throw error
        }
        guard (200..<300).contains(response.status) else {
            let message = AppleGatewayConnection.appleMessage(response.body)
            logger.warning(
                "Apple refused a merchant registration call",
                metadata: ["call": "\(what)", "status": "\(response.status)", "statusMessage": "\(message)"])
            throw GatewayError(
                .rejected, "Apple answered HTTP \(response.status): \(message)", appleStatus: response.status, appleMessage: message)
        }
        return response.body
    }
}
