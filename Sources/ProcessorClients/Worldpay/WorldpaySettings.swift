import ApplePay
import CurlClient
import Foundation
import OrchardCore

/// Worldpay Access settings (`type: worldpay`).
public struct WorldpaySettings: ProcessorSettings, CurlProcessorSettings {
    public static let hosts = ["access.worldpay.com", "try.access.worldpay.com"]
    public var connection: RemoteEndpoint
    public var entity: String
    public var username: Secret
    public var password: Secret
    /// `instruction.narrative.line1`: the statement line.
    public var narrative: String

    public var type: String { "worldpay" }
    public var endpoint: RemoteEndpoint? { connection }
    /// `try.access.worldpay.com` is Worldpay's test environment.
    public var livemode: Bool { isLive(connection, liveHost: "access.worldpay.com") }

    /// Worldpay decrypts the `walletToken` with the key of the EC CSR it issued: EC_v1 tokens.
    public func cannotDecrypt(_ scheme: PaymentData.Scheme) -> String? {
        scheme == .ecV1 ? nil : "Worldpay decrypts EC_v1 tokens only, and this certificate's RSA key gets RSA_v1 tokens"
    }

    /// Worldpay's Google Pay gateway name; the gateway merchant ID is the one Worldpay's
    /// implementation manager hands out, which nothing here can check.
    public static let googlePayGateway = "worldpay"

    public func googlePayGatewayProblem(gateway: String, gatewayMerchantId: String) -> String? {
        gateway == Self.googlePayGateway
            ? nil : "gateway must be \(Self.googlePayGateway), Worldpay's name at Google, not \(gateway.prefix(64))"
    }

    func makeProcessor(http: CurlHTTPClient) -> any PaymentProcessor {
        WorldpayProcessor(settings: self, http: http)
    }
}

/// Reads `type: worldpay`: `entity`, `username` and `password` (env:/file), `narrative` (1–24
/// characters, default "Apple Pay") and the endpoint keys.
public struct WorldpayDriver: ProcessorDriver {
    public init() {}
    public var type: String { "worldpay" }
    public var keys: Set<String> { ProcessorSection.endpointKeys.union(["entity", "username", "password", "narrative"]) }

    public func settings(from section: ProcessorSection, values: any ConfigurationReader) throws(ConfigurationError)
        -> any ProcessorSettings
    {
        try section.expectOnly(keys)
        let connection = try section.endpoint(hosts: WorldpaySettings.hosts, values: values)
        let narrative = try section.string("narrative") ?? "Apple Pay"
        guard (1...24).contains(narrative.count) else { throw ConfigurationError("\(section.label).narrative must be 1–24 characters") }
        return WorldpaySettings(
            connection: connection, entity: try section.required("entity"), username: try section.secret("username", values: values),
            password: try section.secret("password", values: values), narrative: narrative)
    }
}
