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

    struct AdminOptions: ParsableArguments {
        @Option(help: "The Orchard server (http only on loopback).")
        var server: String = "http://127.0.0.1:8080"

        @Option(help: "A file holding the admin token (default: the ORCHARD_ADMIN_TOKEN environment variable).")
        var tokenFile: String?

        func validate() throws {
            guard let url = URLComponents(string: server), let scheme = url.scheme, let host = url.host, !host.isEmpty else {
                throw ValidationError("--server must be a URL like http://127.0.0.1:8080")
            }
            let loopback = ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
            guard scheme == "https" || (scheme == "http" && loopback) else {
                throw ValidationError("--server must use https unless it is on loopback: the admin token must not cross a network in clear")
            }
        }

        func token() throws -> String {
            let text: String?
            if let tokenFile {
                text = try? String(contentsOfFile: tokenFile, encoding: .utf8)
                guard text != nil else { throw ValidationError("cannot read --token-file \(tokenFile)") }
            } else {
                text = ProcessInfo.processInfo.environment["ORCHARD_ADMIN_TOKEN"]
            }
            guard let token = text?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
                throw ValidationError("set ORCHARD_ADMIN_TOKEN or pass --token-file")
            }
            return token
        }

        /// Sends one admin call and prints the JSON answer; a refusal prints one line and exits 1.
        func call(_ method: String, _ path: String, body: [String: Any]? = nil) async throws {
            let token = try token()
            let client = try CurlHTTPClient(configuration: .init(allowedSchemes: ["http", "https"]))
            defer { client.shutdown() }
            var headers: [(name: String, value: String)] = [(name: "Authorization", value: "Bearer \(token)")]
            var bytes: [UInt8]?
            if let body {
                headers.append((name: "Content-Type", value: "application/json"))
                bytes = Array(try JSONSerialization.data(withJSONObject: body))
            }
            let base = server.hasSuffix("/") ? String(server.dropLast()) : server
            let response: CurlResponse
            do {
                response = try await client.execute(CurlRequest(method: method, url: base + path, headers: headers, body: bytes))
            } catch {
                fail("cannot reach \(server): \(error.message)")
            }
            let json = try? JSONSerialization.jsonObject(with: Data(response.body))
            guard (200..<300).contains(response.status) else {
                let error = (json as? [String: Any])?["error"] as? [String: Any]
                fail("\(error?["message"] as? String ?? "HTTP \(response.status)") (HTTP \(response.status))")
            }
            if let json, let pretty = try? JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys]) {
                FileHandle.standardOutput.write(pretty + Data([0x0A]))
            }
        }
    }

    static func escape(_ identifier: String) -> String {
        identifier.addingPercentEncoding(withAllowedCharacters: .urlPathSegmentUnreserved) ?? identifier
    }

    struct Register: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Register a merchant's domains with Apple (adds to any it has).")

        @OptionGroup var admin: AdminOptions
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

        @OptionGroup var admin: AdminOptions
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

        @OptionGroup var admin: AdminOptions
        @Option(help: "One registered merchant's partnerInternalMerchantIdentifier.") var partnerId: String?

        func run() async throws {
            try await admin.call("GET", partnerId.map { "/admin/merchants/\(Domains.escape($0))" } ?? "/admin/merchants")
        }
    }
}
