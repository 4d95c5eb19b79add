import Foundation
import OrchardCore
import OrchardServices
import X509

extension ServerConfiguration {
    /// A configuration made in memory from merchants already made, every other setting at the
    /// loader's default for an absent key: for a router test, which builds the application without
    /// writing a configuration file (`ApplicationDependencies.testing`). `orchard serve` always
    /// loads a file, through ``load(path:environment:time:processors:)``.
    ///
    /// - Parameter tokenRoot: the root tokens must chain to (a test PKI's; the loader's default is Apple's).
    public init(
        merchants: [MerchantConfiguration], tokenRoot: Certificate, platform: MerchantConfiguration? = nil,
        adminToken: AdminToken? = nil, stateDirectory: String = "state"
    ) throws(ConfigurationError) {
        let values = ConfigurationValues(folder: FileManager.default.currentDirectoryPath, environment: [:])
        let (maxBody, port) = try Self.resolveServer(nil)
        self.init(
            host: "127.0.0.1", port: port, publicDirectory: nil, maxBodyBytes: maxBody,
            gateway: try Self.resolveGateway(nil, values: values), merchants: merchants, tokenRoot: tokenRoot,
            tokenPolicy: try Self.resolveTokenPolicy(nil), reconciliation: try PaymentsEngine.Policy(nil, merchants: merchants),
            vault: nil, trustsTestTokenRoot: true, stateDirectory: stateDirectory, applePaySDK: nil, platform: platform,
            adminToken: adminToken)
    }
}
