import ApplePay
import Foundation
import Logging
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardServices
import OrchardTesting
import ProcessorClients
import Testing

@Suite("The metrics, log and drain settings")
struct ObservabilityConfigurationTests {
    func resolve(_ mutate: (inout ConfigurationFile) -> Void) throws -> ServerConfiguration {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        var file = try TestConfiguration.file(gatewayPort: 9, directory: directory)
        mutate(&file)
        return try ServerConfiguration.resolve(file, relativeTo: directory.url.path)
    }

    func problem(_ mutate: (inout ConfigurationFile) -> Void) -> String? {
        do {
            _ = try resolve(mutate)
            return nil
        } catch {
            return (error as? ConfigurationError)?.message ?? "\(error)"
        }
    }

    @Test("defaults: no metrics listener, text logs at the command line's level, a 25 s drain")
    func defaults() throws {
        let configuration = try resolve { _ in }
        #expect(configuration.metrics == nil)
        #expect(configuration.log == LogSettings())
        #expect(configuration.drainTimeout == .seconds(25))
        let metrics = try resolve { $0.metrics = .init() }
        #expect(metrics.metrics == MetricsListener(host: "127.0.0.1", port: 9464, refreshInterval: .seconds(15)))
        #expect(metrics.metrics?.isLoopback == true)
        let set = try resolve {
            $0.log = .init(format: "json", level: "notice")
            $0.server?.drainTimeoutSeconds = 5
        }
        #expect(set.log == LogSettings(format: .json, level: .notice))
        #expect(set.drainTimeout == .seconds(5))
    }

    @Test("bad values are refused, naming the setting")
    func refused() {
        #expect(problem { $0.metrics = .init(port: 70_000) }?.contains("port must be 0–65535") == true)
        let clash = problem {
            $0.metrics = .init(port: 8080)
            $0.server?.port = 8080
        }
        #expect(clash?.contains("is server.port too") == true)
        #expect(problem { $0.metrics = .init(refreshIntervalSeconds: 0) }?.contains("refreshIntervalSeconds 1–3600") == true)
        #expect(problem { $0.log = .init(format: "yaml") }?.contains("log.format must be \"text\" or \"json\"") == true)
        #expect(problem { $0.log = .init(level: "loud") }?.contains("log.level must be one of") == true)
        #expect(problem { $0.server?.drainTimeoutSeconds = 0 }?.contains("server.drainTimeoutSeconds must be 1–300") == true)
    }

    @Test("a key the metrics or log section does not read stops loading")
    func unknownKeys() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try TestConfiguration.file(gatewayPort: 9, directory: directory)
        let encoded = try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file))
        var json = try #require(encoded as? [String: Any])
        for (section, body) in [("metrics", ["prot": 9464]), ("log", ["fromat": "json"])] {
            json[section] = body
            try directory.write("orchard.json", Array(try JSONSerialization.data(withJSONObject: json)))
            do {
                _ = try ServerConfiguration.load(
                    path: directory.path("orchard.json"), environment: [:], processors: ProcessorFactory.drivers)
                Issue.record("\(section) with a misspelt key loaded")
            } catch {
                #expect(error.message.contains("\(section).\(body.keys.first ?? ""): not a setting"), "\(error.message)")
            }
            json[section] = nil
        }
    }

    @Test("a misspelt key anywhere in the file stops loading, naming it and what its section reads")
    func unknownKeysEverywhere() throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try TestConfiguration.file(gatewayPort: 9, directory: directory)
        let encoded = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file)) as? [String: Any])
        func loadError(_ change: (inout [String: Any]) -> Void) throws -> String? {
            var json = encoded
            change(&json)
            try directory.write("orchard.json", Array(try JSONSerialization.data(withJSONObject: json)))
            do {
                _ = try ServerConfiguration.load(
                    path: directory.path("orchard.json"), environment: [:], processors: ProcessorFactory.drivers)
                return nil
            } catch {
                return error.message
            }
        }
        #expect(try loadError { _ in } == nil, "the harness's own file loads")
        // The processor section reads its keys as they come (its driver checks them against its type).
        #expect(try DecodedKeys.openObjects(ConfigurationFile.self).contains("merchants[].processor"))
        #expect(try loadError { $0["paymnets"] = ["vaultKey": "x"] }?.contains("paymnets: not a setting (this section reads: ") == true)
        let server = try loadError { json in
            var server = json["server"] as? [String: Any] ?? [:]
            server["hots"] = "0.0.0.0"
            json["server"] = server
        }
        #expect(server?.contains("server.hots: not a setting") == true && server?.contains("host") == true, "\(server ?? "loaded")")
        let merchant = try loadError { json in
            var merchants = try! #require(json["merchants"] as? [[String: Any]])
            merchants[0]["displayname"] = "Shop"
            json["merchants"] = merchants
        }
        #expect(merchant?.contains("merchants[].displayname: not a setting") == true, "\(merchant ?? "loaded")")
    }

    @Test("a metrics listener off loopback is logged as a warning at startup")
    func publicMetricsWarns() throws {
        let handler = CapturingLogHandler()
        let logger = Logger(label: "t") { _ in handler }
        logStartup(try resolve { $0.metrics = .init(host: "0.0.0.0") }, time: .system, logger: logger)
        #expect(handler.warnings(containing: "metrics.host is not a loopback address").count == 1)
        let quiet = CapturingLogHandler()
        logStartup(try resolve { $0.metrics = .init(host: "127.0.0.1") }, time: .system, logger: Logger(label: "t") { _ in quiet })
        #expect(quiet.warnings(containing: "metrics.host").isEmpty)
    }
}
