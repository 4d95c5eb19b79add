import Foundation
import Logging
import OrchardConfiguration
import OrchardCore
import OrchardServices

/// What the commands that open the store directly (`orchard keys`, `orchard webhooks list` and
/// `replay`, `orchard guard status`) read of a configuration file: its `store` section, the state
/// folder, the merchants' IDs and whether a platform integrator or the guard is configured.
/// Certificates, keys and `env:` values the store does not use are not read, so an operator can
/// run these on a machine without the server's secrets (and with a file that names them).
public struct StoreCommandConfiguration: Sendable {
    /// The checked `store` section.
    public var store: StoreSettings
    /// The SQLite folder, resolved against the file's folder.
    public var stateDirectory: String
    /// `merchants[].merchantIdentifier`, as the file lists them.
    public var merchantIdentifiers: [String]
    /// Whether `platformIntegrator` is set: registered merchants exist only then.
    public var hasPlatformIntegrator: Bool
    /// `guard.enabled` (default true).
    public var guardEnabled: Bool

    /// Reads the file at `path` (decoded and checked for unknown keys as `orchard serve` does) and
    /// resolves its store section through the loader's own code.
    public static func load(path: String, environment: [String: String] = ProcessInfo.processInfo.environment)
        throws(ConfigurationError) -> StoreCommandConfiguration
    {
        let file = try ConfigurationFile.load(path: path)
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        let (store, stateDirectory) = try file.storeSettings(relativeTo: folder, environment: environment)
        return StoreCommandConfiguration(
            store: store, stateDirectory: stateDirectory, merchantIdentifiers: file.merchants.map(\.merchantIdentifier),
            hasPlatformIntegrator: file.platformIntegrator != nil, guardEnabled: file.guard?.enabled ?? true)
    }

    /// Whether `identifier` names a merchant keys can be made for: a configured merchant, or (with a
    /// platform integrator) one of the `registered` merchants' partner IDs.
    public func knowsMerchant(_ identifier: String, registered: [RegisteredMerchant]) -> Bool {
        merchantIdentifiers.contains(identifier)
            || (hasPlatformIntegrator && registered.contains { $0.partnerIdentifier == identifier })
    }

    /// Opens the store, runs `body` with it, and stops it when `body` returns or throws.
    public func withStore<T: Sendable>(logger: Logger, _ body: (any OrchardStore) async throws -> T) async throws -> T {
        try await ServerConfiguration.withStore(store, stateDirectory: stateDirectory, logger: logger, body)
    }
}
