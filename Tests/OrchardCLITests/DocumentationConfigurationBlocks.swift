import Crypto
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardRuntime
import OrchardTesting
import SwiftASN1
import Testing
import X509

/// The configuration blocks of the pages, loaded as Orchard loads them: the README's complete
/// example, and each fragment merged into it. The files they name are made by a test PKI, the
/// `env:` variables they name are set.
struct DocumentationConfigurationBlocks {
    let folder: TemporaryDirectory
    let environment: [String: String]

    /// The README's example merchant, whose files the test makes.
    static let merchant = "merchant.com.example.shop"

    /// Makes, in a new folder, every file the README's example names (`keys/…`), from the shared test PKI.
    init() throws {
        folder = try TemporaryDirectory()
        let pki = TestMaterial.shared.pki
        try FileManager.default.createDirectory(atPath: folder.path("keys"), withIntermediateDirectories: true)
        let identity = try pki.issueMerchantIdentity(merchantIdentifier: Self.merchant)
        try folder.write("keys/merchant_id.cer", try Self.der(identity.certificate))
        try folder.write("keys/identity.key", Array(try identity.keyPEM.utf8))
        try folder.write("keys/apple-developer-merchantid-domain-association", Array("association file\n".utf8))
        let processing = try pki.issueProcessingCertificate(
            merchantIdentifier: Self.merchant,
            publicKey: Certificate.PublicKey(P256.Signing.PrivateKey().publicKey))
        try folder.write("keys/apple_pay.cer", try Self.der(processing))
        try folder.write("db-ca.pem", Array(try pki.ca.certificatePEM.utf8))
        // docs/wallet-orders.md's files: an Order Type ID identity, its intermediate (DER, as Apple
        // serves WWDR G4) and a logo.
        let orderType = try pki.issueOrderTypeIdentity(orderTypeIdentifier: "order.com.example.shop")
        try orderType.leaf.write(certificateTo: folder.path("keys/order-type.pem"), keyTo: folder.path("keys/order-type.key"))
        try folder.write("keys/AppleWWDRCAG4.cer", try Self.der(orderType.intermediate.certificate))
        try folder.write("keys/logo.png", [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 0])
        var environment = ProcessInfo.processInfo.environment
        environment["WORLDLINE_SECRET"] = "worldline-secret-of-the-example"
        environment["ORCHARD_DB_PASSWORD"] = "database-password"
        environment["ORCHARD_VAULT_KEY"] = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        self.environment = environment
    }

    static func der(_ certificate: Certificate) throws -> [UInt8] {
        var serializer = DER.Serializer()
        try serializer.serialize(certificate)
        return serializer.serializedBytes
    }

    /// A block's JSON: a whole object, or a fragment of members (`"store": {…}`) made into one.
    static func object(_ block: DocumentationBlocks.Block) throws -> [String: Any] {
        let text = block.text.trimmingCharacters(in: .whitespacesAndNewlines)
        let whole = text.hasPrefix("{") ? text : "{" + text + "}"
        guard let object = try JSONSerialization.jsonObject(with: Data(whole.utf8)) as? [String: Any] else {
            throw DocumentationBlockFailure("\(block) is not a JSON object")
        }
        return object
    }

    /// Whether a JSON block configures Orchard (rather than showing an event or a log line).
    static func isConfiguration(_ object: [String: Any]) -> Bool {
        object["type"] == nil && object["level"] == nil
    }

    /// `fragment` merged over `base`, member by member (objects merged, anything else replaced).
    /// A fragment of a merchant's own members (`"walletOrders": {…}`) goes into each merchant.
    static func merged(_ base: [String: Any], _ fragment: [String: Any]) -> [String: Any] {
        let merchantMembers = ["walletOrders"]
        if let key = fragment.keys.first(where: merchantMembers.contains), var merchants = base["merchants"] as? [[String: Any]] {
            for index in merchants.indices { merchants[index] = merged(merchants[index], [key: fragment[key] as Any]) }
            var result = merged(base, fragment.filter { !merchantMembers.contains($0.key) })
            result["merchants"] = merchants
            return result
        }
        return base.merging(fragment) { old, new in
            guard let old = old as? [String: Any], let new = new as? [String: Any] else { return new }
            return merged(old, new)
        }
    }

    /// Writes `configuration` beside the keys, its state in the folder (not `/var/lib/orchard`),
    /// and returns its path.
    func write(_ configuration: [String: Any], as name: String) throws -> String {
        var configuration = configuration
        if configuration["stateDirectory"] != nil { configuration["stateDirectory"] = folder.path("state-" + name) }
        let data = try JSONSerialization.data(withJSONObject: configuration, options: [.prettyPrinted, .sortedKeys])
        try folder.write(name + ".json", Array(data))
        return folder.path(name + ".json")
    }

    /// Loads `configuration` through the loader `orchard serve` uses; the refusal's message, or nil.
    func load(_ configuration: [String: Any], as name: String) throws -> String? {
        let path = try write(configuration, as: name)
        do {
            _ = try ServerConfiguration.load(path: path, environment: environment)
            return nil
        } catch {
            return error.message
        }
    }

    /// `orchard doctor` on `configuration` (its live and domain checks are options, left out).
    func doctor(_ configuration: [String: Any], as name: String, environment extra: [String: String] = [:]) async throws
        -> OrchardProcess.Result
    {
        let path = try write(configuration, as: name)
        return try await OrchardProcess.run(
            ["doctor", "--config", path], environment: environment.merging(extra) { $1 }, currentDirectory: folder.url)
    }

    /// `orchard doctor` on a configuration whose `store.postgres` names `db.internal`, with a
    /// PostgreSQL of the test's on loopback in its place: TLS on, its certificate issued by the
    /// test CA the example's `db-ca.pem` holds (so `verify-full` holds), the `orchard` role, and
    /// the `orchard` database made as the page says.
    func doctorOnPostgres(_ configuration: [String: Any], as name: String) async throws -> OrchardProcess.Result {
        let certificate = try TestMaterial.shared.pki.issueServerCertificate(hosts: ["127.0.0.1"])
        let postgres = try await PostgresServer.dedicated(
            settings: ["ssl": "on", "ssl_cert_file": "server.crt", "ssl_key_file": "server.key"],
            files: ["server.crt": Array(try certificate.certificatePEM.utf8), "server.key": Array(try certificate.keyPEM.utf8)])
        defer { postgres.stop() }
        try await postgres.query("postgres", "CREATE DATABASE orchard")
        var configuration = configuration
        var store = configuration["store"] as? [String: Any] ?? [:]
        var settings = store["postgres"] as? [String: Any] ?? [:]
        settings["host"] = "127.0.0.1"
        settings["port"] = postgres.port
        // What the loader chooses for db.internal, said outright: on loopback it would not use TLS.
        var tls = settings["tls"] as? [String: Any] ?? [:]
        tls["mode"] = "verify-full"
        settings["tls"] = tls
        store["postgres"] = settings
        configuration["store"] = store
        return try await doctor(configuration, as: name, environment: ["ORCHARD_DB_PASSWORD": postgres.password])
    }
}

/// A documentation block that did not do what its page says.
struct DocumentationBlockFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
