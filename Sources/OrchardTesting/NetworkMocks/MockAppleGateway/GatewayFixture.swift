import Foundation

/// Key material for tests: a CA, a loopback server certificate and one merchant identity.
///
/// RSA key generation is slow, so ``shared`` makes it once per process.
public struct TestMaterial: Sendable {
    public static let merchantIdentifier = "merchant.dev.orchard.test"
    /// A second, unrelated merchant, for isolation tests.
    public static let secondMerchantIdentifier = "merchant.dev.orchard.second"
    /// A payment platform integrator, for the registration API.
    public static let platformMerchantIdentifier = "merchant.dev.orchard.platform"

    public let pki: TestPKI
    public let server: TestCertificate
    public let identity: TestCertificate

    public static let shared: TestMaterial = {
        do {
            let pki = try TestPKI.make()
            return TestMaterial(
                pki: pki,
                server: try pki.issueServerCertificate(),
                identity: try pki.issueMerchantIdentity(merchantIdentifier: merchantIdentifier))
        } catch {
            fatalError("cannot create the test PKI: \(error)")
        }
    }()

    /// The second merchant's identity, made on first use.
    public static let secondIdentity: TestCertificate = {
        do {
            return try shared.pki.issueMerchantIdentity(merchantIdentifier: secondMerchantIdentifier)
        } catch {
            fatalError("cannot create the second merchant identity: \(error)")
        }
    }()

    /// The platform integrator's identity, made on first use.
    public static let platformIdentity: TestCertificate = {
        do {
            return try shared.pki.issueMerchantIdentity(merchantIdentifier: platformMerchantIdentifier)
        } catch {
            fatalError("cannot create the platform integrator identity: \(error)")
        }
    }()

    /// The CA certificate in PEM, for a client's trust store.
    public var caPEM: [UInt8] {
        (try? Array(TestCertificate(certificate: pki.ca.certificate, privateKey: pki.ca.privateKey).certificatePEM.utf8)) ?? []
    }
}

/// A started mock gateway with everything a client needs to call it.
public struct GatewayFixture: Sendable {
    public let material: TestMaterial
    public let gateway: MockAppleGateway
    public let port: Int

    public var baseURL: String { "https://127.0.0.1:\(port)" }

    /// Starts a mock gateway on a free loopback port that knows the shared test merchant
    /// with `domains`, and any `otherMerchants`.
    public static func start(
        domains: [String] = ["shop.example"],
        otherMerchants: [MockMerchant] = [],
        faults: MockGatewayFaults = .none,
        material: TestMaterial = .shared
    ) async throws -> GatewayFixture {
        let gateway = try MockAppleGateway(
            configuration: .init(
                serverIdentity: material.server,
                clientCA: material.pki.ca.certificate,
                merchants: [MockMerchant(merchantIdentifier: TestMaterial.merchantIdentifier, domains: domains)] + otherMerchants,
                faults: faults))
        let port = try await gateway.start()
        return GatewayFixture(material: material, gateway: gateway, port: port)
    }
}
