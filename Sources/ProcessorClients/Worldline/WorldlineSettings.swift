import ApplePay
import CurlClient
import Foundation
import OrchardCore

/// Worldline Direct settings (`type: worldline`).
public struct WorldlineSettings: ProcessorSettings, CurlProcessorSettings {
    public static let hosts = ["payment.direct.worldline-solutions.com", "payment.preprod.direct.worldline-solutions.com"]
    /// Who decrypts the token: Worldline, or Orchard (which then sends the DPAN and cryptogram).
    public enum Decryption: String, Sendable { case processor, orchard }
    public var connection: RemoteEndpoint
    /// The PSPID.
    public var merchantId: String
    public var apiKeyId: String
    public var secretApiKey: Secret
    /// `FINAL_AUTHORIZATION` (settle later) or `SALE`.
    public var authorizationMode: String
    public var decryption: Decryption

    public var type: String { "worldline" }
    public var endpoint: RemoteEndpoint? { connection }
    /// `payment.preprod.direct.worldline-solutions.com` is Worldline's test environment.
    public var livemode: Bool { isLive(connection, liveHost: "payment.direct.worldline-solutions.com") }

    /// Worldline decrypts `encryptedPaymentData` with `decryption: processor`, for EC_v1 tokens only.
    public func cannotDecrypt(_ scheme: PaymentData.Scheme) -> String? {
        if decryption == .orchard { return "processor.decryption is orchard, which sends Worldline what Orchard decrypted" }
        if scheme != .ecV1 { return "Worldline decrypts EC_v1 tokens only, and this certificate's RSA key gets RSA_v1 tokens" }
        return nil
    }

    /// Worldline Direct seals Google Pay tokens for the PSPID. Its gateway name is the one its
    /// GetPaymentProduct 320 answers (`paymentProduct320SpecificData.gateway`), which is not the
    /// same for every platform (`worldlinedirect`, `worldlineingenicoogone`): `orchard doctor
    /// --live` asks it; here only its form is checked.
    public func googlePayGatewayProblem(gateway: String, gatewayMerchantId: String) -> String? {
        guard (1...64).contains(gateway.utf8.count), gateway.utf8.allSatisfy({ (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) })
        else { return "gateway must be the name Worldline's GetPaymentProduct 320 gives (lowercase letters and digits)" }
        guard gatewayMerchantId == merchantId else {
            return "gatewayMerchantId must be the PSPID, \(merchantId), which Worldline's tokens are sealed for"
        }
        return nil
    }

    func makeProcessor(http: CurlHTTPClient) -> any PaymentProcessor {
        WorldlineProcessor(settings: self, http: http)
    }
}

/// Reads `type: worldline`: `merchantId` (the PSPID), `apiKeyId`, `secretApiKey` (env:/file),
/// `authorizationMode`, `decryption` and the endpoint keys.
public struct WorldlineDriver: ProcessorDriver {
    public init() {}
    public var type: String { "worldline" }
    public var keys: Set<String> {
        ProcessorSection.endpointKeys.union(["merchantId", "apiKeyId", "secretApiKey", "authorizationMode", "decryption"])
    }

    public func settings(from section: ProcessorSection, values: any ConfigurationReader) throws(ConfigurationError)
        -> any ProcessorSettings
    {
        try section.expectOnly(keys)
        let connection = try section.endpoint(hosts: WorldlineSettings.hosts, values: values)
        let mode = try section.string("authorizationMode") ?? "FINAL_AUTHORIZATION"
        guard ["FINAL_AUTHORIZATION", "SALE"].contains(mode) else {
            throw ConfigurationError("\(section.label).authorizationMode must be FINAL_AUTHORIZATION or SALE")
        }
        guard let decryption = WorldlineSettings.Decryption(rawValue: try section.string("decryption") ?? "processor") else {
            throw ConfigurationError("\(section.label).decryption must be processor (Worldline decrypts) or orchard (Orchard decrypts)")
        }
        return WorldlineSettings(
            connection: connection, merchantId: try section.required("merchantId"), apiKeyId: try section.required("apiKeyId"),
            secretApiKey: try section.secret("secretApiKey", values: values), authorizationMode: mode, decryption: decryption)
    }
}
