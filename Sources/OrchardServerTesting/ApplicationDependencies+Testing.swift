import ApplePay
import Crypto
import Foundation
import Logging
import OrchardComposition
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardInMemory
import OrchardServer
import OrchardServices
import OrchardTesting

/// A session service that answers without a network: what a router test's merchant-session
/// route calls. Its answer names the request's domain, so a test sees which one was asked for.
public struct StubSessions: MerchantSessionService {
    public init() {}

    public func createSession(_ request: MerchantSessionRequest, for merchant: MerchantConfiguration) async throws(GatewayError)
        -> [UInt8]
    {
        Array(#"{"merchantIdentifier":"stub","domainName":"\#(request.initiativeContext)"}"#.utf8)
    }
}

extension ApplicationDependencies {
    /// The application's dependencies for a router test, as the todos example's
    /// `buildRouter(TodoMemoryRepository())`: the composition root (the one production uses) on
    /// the in-memory store and a configuration made in memory for the shared test merchant, with
    /// record-only processors, ``StubSessions`` and nothing that calls out. No configuration file,
    /// no database file, no socket.
    ///
    /// - Parameters:
    ///   - domains: the test merchant's domains. HummingbirdTesting's router client always says
    ///     `Host: localhost`, so it is among them.
    ///   - repositories: replaces one of the store's repositories (a failing one, say).
    ///   - configure: changes to the configuration before the application is made (limits, the
    ///     admin token, the checkout page).
    public static func testing(
        store: InMemoryStore = InMemoryStore(), repositories: (Repositories) -> Repositories = { $0 },
        sessions: any MerchantSessionService = StubSessions(), time: TimeSource = .system,
        domains: [String] = [TestConfiguration.domain, "localhost"], simulator: (any SimulatedApplePay)? = nil,
        shopCalls: (any ShopTransport)? = nil, activity: ServerActivity = ServerActivity(),
        logger: Logger = Logger(label: "orchard.test"),
        configure: (inout ServerConfiguration) throws -> Void = { _ in }
    ) throws -> ApplicationDependencies {
        var configuration = try ServerConfiguration(
            merchants: [try TestMerchant.configuration(domains: domains, at: time.now)],
            tokenRoot: TestConfiguration.tokenChain.root.certificate)
        try configure(&configuration)
        return ApplicationDependencies(
            configuration: configuration, sessions: sessions, store: store, repositories: repositories(Repositories(store)),
            time: time, simulator: simulator, shopCalls: shopCalls, activity: activity, logger: logger)
    }
}

/// The shared test merchant (``TestConfiguration``'s identity, association file, catalogue and
/// processing key) and the second one (``MoreMerchants``), made in memory as the loader would make
/// them from their files.
public enum TestMerchant {
    public static func configuration(domains: [String], at now: Date = Date()) throws -> MerchantConfiguration {
        try make(
            TestMaterial.merchantIdentifier, "Orchard Test Shop", domains: domains, identity: TestMaterial.shared.identity,
            association: TestConfiguration.associationFile, processingKey: TestConfiguration.processingKey, at: now)
    }

    /// ``MoreMerchants``' second merchant, on its own domain.
    public static func second(at now: Date = Date()) throws -> MerchantConfiguration {
        try make(
            TestMaterial.secondMerchantIdentifier, "Second Shop", domains: [MoreMerchants.secondDomain],
            identity: TestMaterial.secondIdentity, association: MoreMerchants.secondAssociation,
            processingKey: MoreMerchants.secondProcessingKey, at: now)
    }

    static func make(
        _ merchantIdentifier: String, _ displayName: String, domains: [String], identity: TestCertificate, association: [UInt8],
        processingKey: P256.KeyAgreement.PrivateKey, at now: Date
    ) throws -> MerchantConfiguration {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return MerchantConfiguration(
            merchantIdentifier: merchantIdentifier, displayName: displayName, domains: domains,
            identity: try MerchantIdentity(
                certificatePEM: Array(try identity.certificatePEM.utf8), keyPEM: Array(try identity.keyPEM.utf8),
                certificateName: "\(displayName)'s test identity", keyName: "its key", at: now),
            identitySource: "\(displayName)'s test identity (in memory)", domainAssociation: association,
            catalogue: try decoder.decode(Catalogue.self, from: Data(TestConfiguration.catalogueJSON.utf8)).validated(),
            processingKeys: [try ProcessingKey(privateKeyPEM: processingKey.pemRepresentation, merchantIdentifier: merchantIdentifier)])
    }
}

extension RateLimitSettings {
    /// No bucket at all: a router test sends many calls from one address.
    public static let unlimited = RateLimitSettings(perClient: [:], perMerchant: [:], maxTrackedClients: 1)
}
