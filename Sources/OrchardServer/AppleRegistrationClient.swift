import ApplePay
import CurlClient
import Foundation
import Logging

/// Apple's Web Merchant Registration API, for payment platform integrators.
public protocol MerchantRegistrationService: Sendable {
    func register(_ registration: MerchantRegistration) async throws(OrchardError)
    func unregister(_ unregistration: MerchantUnregistration) async throws(OrchardError)
    func details(partnerIdentifier: String) async throws(OrchardError) -> RegisteredMerchantDetails
}

/// Calls the registration API over mutual TLS with the platform integrator's identity,
/// through the same libcurl client (and connection pool) as merchant sessions.
public struct AppleRegistrationClient: MerchantRegistrationService {
    let http: CurlHTTPClient
    let baseURL: String
    let platform: MerchantConfiguration
    let trust: TLSTrust
    let timeouts: CurlTimeouts
    let logger: Logger

    /// Nil when the configuration has no `platformIntegrator`.
    public init?(http: CurlHTTPClient, configuration: ServerConfiguration, logger: Logger) {
        guard let platform = configuration.platform else { return nil }
        self.http = http
        self.baseURL = configuration.gatewayBaseURL + "/paymentservices"
        self.platform = platform
        self.trust = configuration.gatewayTrust
        self.timeouts = configuration.gatewayTimeouts
        self.logger = logger
    }

    public func register(_ registration: MerchantRegistration) async throws(OrchardError) {
        _ = try await call("POST", "/registerMerchant", body: registration, what: "register")
    }

    public func unregister(_ unregistration: MerchantUnregistration) async throws(OrchardError) {
        _ = try await call("POST", "/unregisterMerchant", body: unregistration, what: "unregister")
    }

    public func details(partnerIdentifier: String) async throws(OrchardError) -> RegisteredMerchantDetails {
        let path = "/merchant/" + (partnerIdentifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? "")
        let body = try await call("GET", path, body: nil as MerchantRegistration?, what: "details")
        do {
            return try JSONDecoder().decode(RegisteredMerchantDetails.self, from: Data(body))
        } catch {
            throw OrchardError(.registrationRejected, "Apple's merchant details could not be read")
        }
    }

    private func call(_ method: String, _ path: String, body: (some Encodable)?, what: String) async throws(OrchardError) -> [UInt8] {
        var bytes: [UInt8]?
        if let body {
            do {
                bytes = Array(try JSONEncoder().encode(body))
            } catch {
                throw OrchardError(.internalError, "cannot encode the registration request")
            }
        }
        var headers: [(name: String, value: String)] = [(name: "Accept", value: "application/json")]
        if bytes != nil { headers.append((name: "Content-Type", value: "application/json")) }
        let response: CurlResponse
        do {
            response = try await http.execute(
                CurlRequest(
                    method: method, url: baseURL + path, headers: headers, body: bytes, identity: platform.tlsIdentity, trust: trust,
                    timeouts: timeouts))
        } catch {
            logger.error("merchant registration call failed", metadata: ["call": "\(what)", "error": "\(error)"])
            if error.kind == .timedOut { throw OrchardError(.gatewayTimeout, "Apple's registration API did not answer in time") }
            throw OrchardError(.gatewayUnavailable, "Apple's registration API could not be reached (\(error.message))")
        }
        guard (200..<300).contains(response.status) else {
            let apple = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
            let message =
                (apple["statusMessage"] as? String) ?? String(decoding: response.body.prefix(200), as: UTF8.self)
            logger.warning(
                "Apple refused a merchant registration call",
                metadata: ["call": "\(what)", "status": "\(response.status)", "statusMessage": "\(message)"])
            throw OrchardError(.registrationRejected, "Apple answered HTTP \(response.status): \(message)", upstreamStatus: response.status)
        }
        return response.body
    }
}
