import CurlClient
import Foundation
import OrchardConfiguration
import OrchardCore
import OrchardIntegrationTesting
import OrchardServerTesting
import OrchardTesting
import Testing

/// `orchard domains`, a process against a live server's admin API.
@Suite("orchard domains: the platform's registrations from the command line")
struct DomainsCommandTests {
    @Test("orchard domains register|show|unregister drive the admin API; a wrong token exits 1 with one line")
    func cli() async throws {
        try await MoreMerchants.with(transport: .live) { server in
            let base = ["--server", "http://127.0.0.1:\(server.port)"]
            var environment = ProcessInfo.processInfo.environment
            environment["ORCHARD_ADMIN_TOKEN"] = MoreMerchants.adminToken
            // The CLI sends Host 127.0.0.1; admin routes do not depend on Host.
            let registered = try await OrchardProcess.run(
                ["domains", "register"] + base + ["--partner-id", "cli-shop", "--name", "CLI Shop", "--domain", "cli.example"],
                environment: environment)
            #expect(registered.status == 0, "\(registered.stderr)")
            let json = try JSONSerialization.jsonObject(with: Data(registered.stdout)) as? [String: Any]
            #expect(json?["partnerIdentifier"] as? String == "cli-shop")
            #expect(server.gateway.partnerMerchants["cli-shop"]?.domainNames == ["cli.example"])

            let shown = try await OrchardProcess.run(["domains", "show"] + base, environment: environment)
            #expect(shown.status == 0)
            #expect(String(decoding: shown.stdout, as: UTF8.self).contains("cli.example"))

            let removed = try await OrchardProcess.run(
                ["domains", "unregister"] + base + ["--partner-id", "cli-shop", "--domain", "cli.example", "--reason", "test"],
                environment: environment)
            #expect(removed.status == 0, "\(removed.stderr) \(String(decoding: removed.stdout, as: UTF8.self))")
            #expect(server.gateway.partnerMerchants["cli-shop"] == nil)

            environment["ORCHARD_ADMIN_TOKEN"] = "wrong-token"
            let denied = try await OrchardProcess.run(["domains", "show"] + base, environment: environment)
            #expect(denied.status == 1)
            #expect(denied.stderr.contains("HTTP 401"))
            #expect(denied.stderr.split(separator: "\n").count == 1)

            let remote = try await OrchardProcess.run(
                ["domains", "show", "--server", "http://shop.example:8080"], environment: environment)
            #expect(remote.status != 0)
            #expect(remote.stderr.contains("https"))
        }
    }
}
