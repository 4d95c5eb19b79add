import Foundation
import OrchardConfiguration
import OrchardConfigurationTesting
import OrchardCore
import OrchardServices
import OrchardTesting
import Testing

/// The `tokenEvents` and `retention.tokenEventsDays` settings, read by the server's configuration
/// loader; the policy they set is OrchardCoreTests' TokenEventPolicyTests.
@Suite("Token-event settings: defaults, values read, bad values and unknown keys refused")
struct TokenEventSettingsTests {
    static let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test("tokenEvents and retention.tokenEventsDays: defaults, values read, bad values and unknown keys refused")
    func settings() throws {
        let defaults = try LimitsConfigurationTests.resolve()
        #expect(defaults.tokenEvents == TokenEventPolicy())
        #expect(defaults.tokenEvents.pollInterval == .seconds(1) && defaults.tokenEvents.retryWindow == .seconds(72 * 3600))
        #expect(defaults.retention.finishedTokenEvents == .seconds(30 * 86_400))
        let read = try LimitsConfigurationTests.resolve { file in
            file.tokenEvents = .init(pollIntervalMilliseconds: 250, firstRetrySeconds: 5, maximumRetrySeconds: 60, retryHours: 2)
            file.retention = .init(tokenEventsDays: 0)
        }
        #expect(read.tokenEvents.pollInterval == .milliseconds(250) && read.tokenEvents.firstRetry == .seconds(5))
        #expect(read.tokenEvents.maximumRetry == .seconds(60) && read.tokenEvents.retryWindow == .seconds(7200))
        #expect(read.retention.finishedTokenEvents == nil && read.retention.cutoffs(at: Self.t0).finishedTokenEvents == nil)
        for bad in [
            ConfigurationFile.TokenEvents(pollIntervalMilliseconds: 50), .init(firstRetrySeconds: 0),
            .init(firstRetrySeconds: 60, maximumRetrySeconds: 30),
            .init(retryHours: 721),
        ] {
            let message = LimitsConfigurationTests.refusal { $0.tokenEvents = bad }
            #expect(message?.contains("tokenEvents:") == true, "\(message ?? "accepted")")
        }
        #expect(
            LimitsConfigurationTests.refusal { $0.retention = .init(tokenEventsDays: 4000) }?.contains("retention.tokenEventsDays") == true)

        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let file = try TestConfiguration.file(gatewayPort: 1, directory: directory)
        var json = try #require(try JSONSerialization.jsonObject(with: try JSONEncoder().encode(file)) as? [String: Any])
        json["tokenEvents"] = ["pollInterval": 100]
        let path = directory.path("orchard.json")
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try ConfigurationFile.load(path: path)
        } throws: { error in
            (error as? ConfigurationError)?.message.contains("tokenEvents.pollInterval: not a setting") == true
        }
    }
}
