import ApplePay
import ArgumentParser
import CurlClient
import Foundation

/// `orchard domains …`: a client of a running server's admin API, which registers domains
/// with Apple and keeps the registry the server routes by.
struct Domains: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Register and unregister merchant domains with Apple (platform integrators), through a running Orchard's admin API.",
        discussion: """
            The admin token comes from ORCHARD_ADMIN_TOKEN or --token-file. The server must have \
            admin.token and platformIntegrator configured.
            """,
        subcommands: [Register.self, Unregister.self, Show.self])

    static func escape(_ identifier: String) -> String {
        identifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? identifier
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a merchant's domains with Apple (adds to any it has).")

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "partnerInternalMerchantIdentifier: your ID for the merchant.") var partnerId: String
        @Option(help: "partnerMerchantName: shown on the Apple Pay sheet.") var name: String
        @Option(name: .customLong("domain"), help: "A domain to register (repeat for several, at most 99).") var domains: [String]
        @Option(help: "The merchant's website (https).") var merchantUrl: String?
        @Option(help: "The merchant ID tokens are encrypted to (default: the platform integrator's).") var encryptTo: String?

        func run() async throws {
            var body: [String: Any] = [
                "partnerInternalMerchantIdentifier": partnerId, "partnerMerchantName": name, "domainNames": domains,
            ]
            if let merchantUrl { body["merchantUrl"] = merchantUrl }
            if let encryptTo { body["encryptTo"] = encryptTo }
            try await admin.call("POST", "/admin/merchants", body: body)
        }
    }

    struct Unregister: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Unregister domains; removing a merchant's last domain removes the merchant.")

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "partnerInternalMerchantIdentifier.") var partnerId: String
        @Option(name: .customLong("domain"), help: "A domain to unregister (repeat for several).") var domains: [String]
        @Option(help: "Why (sent to Apple).") var reason: String

        func run() async throws {
            try await admin.call(
                "POST", "/admin/merchants/\(Domains.escape(partnerId))/unregister", body: ["domainNames": domains, "reason": reason])
        }
    }

    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List configured and registered merchants, or show one merchant as the registry and Apple know it.")

        @OptionGroup var admin: AdminAPIOptions
        @Option(help: "One registered merchant's partnerInternalMerchantIdentifier.") var partnerId: String?

        func run() async throws {
            try await admin.call("GET", partnerId.map { "/admin/merchants/\(Domains.escape($0))" } ?? "/admin/merchants")
        }
    }
}
