import ApplePay
import Foundation

/// A credential read from the environment or a file: never printed.
public struct Secret: Sendable, CustomStringConvertible {
    public let value: String
    public init(_ value: String) { self.value = value }
    public var description: String { "Secret(redacted)" }
}

/// A merchant's processor settings, checked at startup. Each processor adapter defines its own.
public protocol ProcessorSettings: Sendable {
    /// The `type` configuration names it by: `record`, `worldpay`, `worldline`.
    var type: String { get }
    /// Where the processor is called; nil for one that calls nothing.
    var endpoint: RemoteEndpoint? { get }
    /// Why this processor, so set, cannot decrypt a `scheme` token itself with a processing key
    /// only it holds (Orchard forwarding the token encrypted); nil when it can.
    func cannotDecrypt(_ scheme: PaymentData.Scheme) -> String?
    /// Why Google Pay tokens sealed for `gateway` and `gatewayMerchantId` would not reach this
    /// processor (a gateway name not its own, an ID it does not go by); nil when they would.
    func googlePayGatewayProblem(gateway: String, gatewayMerchantId: String) -> String?
    /// Whether payments go to the processor's production environment, where money moves: false
    /// for its test environment, for a mock (`allowNonProductionHost`) and for one that calls nothing.
    var livemode: Bool { get }
}

extension ProcessorSettings {
    /// Calls nothing, so moves no money (the default).
    public var livemode: Bool { false }

    /// Whether `endpoint` is `https://<liveHost>` on port 443: the processor's production environment.
    public func isLive(_ endpoint: RemoteEndpoint?, liveHost: String) -> Bool {
        guard let endpoint, let components = URLComponents(string: endpoint.baseURL) else { return false }
        return endpoint.isProductionHost && components.host?.lowercased() == liveHost && (components.port ?? 443) == 443
    }

    /// A processor that names no gateway takes no Google Pay gateway tokens.
    public func googlePayGatewayProblem(gateway: String, gatewayMerchantId: String) -> String? {
        "the \(type) processor takes no Google Pay gateway tokens"
    }
}

/// `record`: payments are recorded for a back office, nothing is called. The default.
public struct RecordOnlySettings: ProcessorSettings {
    public init() {}
    public var type: String { "record" }
    public var endpoint: RemoteEndpoint? { nil }
    public func cannotDecrypt(_ scheme: PaymentData.Scheme) -> String? {
        "the processor is record, which calls no processor, so nothing would ever decrypt the tokens"
    }
    /// Records any gateway's token: nothing is charged, so there is no gateway to match.
    public func googlePayGatewayProblem(gateway: String, gatewayMerchantId: String) -> String? { nil }
}

/// Checks one processor type's configuration section (`merchants[].processor`) and returns its
/// settings. The server is handed the drivers the program is built with; adding a processor is
/// a driver, its settings and its client in the processor adapters, and one entry in their list.
public protocol ProcessorDriver: Sendable {
    /// The `type` value this driver reads.
    var type: String { get }
    /// Every key of `merchants[].processor` this driver reads besides `type`: its settings refuse
    /// any other (``ProcessorSection/expectOnly(_:)``), and the configuration reference documents these.
    var keys: Set<String> { get }
    /// Checked settings, or a ``ConfigurationError`` naming the key (`section.label`) and the fix.
    func settings(from section: ProcessorSection, values: any ConfigurationReader) throws(ConfigurationError) -> any ProcessorSettings
}

/// The built-in `record` driver.
public struct RecordOnlyDriver: ProcessorDriver {
    public init() {}
    public var type: String { "record" }
    public var keys: Set<String> { [] }
    public func settings(from section: ProcessorSection, values: any ConfigurationReader) throws(ConfigurationError)
        -> any ProcessorSettings
    {
        try section.expectOnly(keys)
        return RecordOnlySettings()
    }
}
