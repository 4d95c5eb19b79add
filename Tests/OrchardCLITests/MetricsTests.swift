import CurlClient
import Foundation
import OrchardConfiguration
import OrchardIntegrationTesting
import OrchardServer
import OrchardServerTesting
import OrchardServices
import OrchardTesting
import Testing

/// The Prometheus text format, read far enough for tests: every sample with its labels.
struct Exposition {
    struct Sample: Equatable {
        var name: String
        var labels: [String: String]
        var value: Double
    }

    let samples: [Sample]

    init(_ text: String) {
        samples = text.split(separator: "\n").compactMap { line in
            line.hasPrefix("#") ? nil : Self.sample(Substring(line))
        }
    }

    /// The value of the series with exactly these labels.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Series of `name` whose labels include `labels`.
    func matching(_ name: String, _ labels: [String: String]) -> [Sample] {
        samples.filter { sample in sample.name == name && labels.allSatisfy { sample.labels[$0.key] == $0.value } }
    }

    /// `name{key="value",…} 1.5`; label values may hold escaped quotes, commas and braces.
    static func sample(_ line: Substring) -> Sample? {
        guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { return nil }
        let series = line[..<space]
        guard let brace = series.firstIndex(of: "{") else { return Sample(name: String(series), labels: [:], value: value) }
        var labels: [String: String] = [:]
        var rest = series[series.index(after: brace)...]
        while let equals = rest.firstIndex(of: "=") {
            let key = String(rest[..<equals])
            var text = ""
            var index = rest.index(equals, offsetBy: 2)  // past `="`
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\", rest.index(after: index) < rest.endIndex {
                    index = rest.index(after: index)
                    text.append(rest[index] == "n" ? "\n" : rest[index])
                } else {
                    text.append(rest[index])
                }
                index = rest.index(after: index)
            }
            labels[key] = text
            rest = rest[rest.index(index, offsetBy: 2)...]  // past `",` or `"}`
        }
        return Sample(name: String(series[..<brace]), labels: labels, value: value)
    }
}

@Suite("Prometheus metrics on their own listener, from a real `orchard serve`")
struct MetricsTests {
    static let sessionBody = Array(#"{"validationURL": "https://apple-pay-gateway.apple.com/paymentservices/paymentSession"}"#.utf8)

    static func scrape(_ server: ServerProcess, port: Int) async throws -> (response: CurlResponse, metrics: Exposition) {
        let response = try await server.client.execute(CurlRequest(url: "http://127.0.0.1:\(port)/metrics"))
        return (response, Exposition(String(decoding: response.body, as: UTF8.self)))
    }

    @Test("two sessions, an authorization and a 404 show up as labelled series; /metrics is not on the public port")
    func scrapeAfterTraffic() async throws {
        let fixture = try await GatewayFixture.start(domains: [ServerHarness.domain])
        // The merchant's webhook goes nowhere, so the payment's event waits in the outbox for its retry.
        let server = try ServerProcess(
            processorURL: nil, environment: ["SHOP_WEBHOOK_SECRET": String(repeating: "s", count: 32)], gatewayPort: fixture.port
        ) { file in
            // Port 0: the kernel picks it, and the test reads it from what the process listens on.
            file.metrics = .init(host: "127.0.0.1", port: 0, refreshIntervalSeconds: 1)
            file.merchants[0].webhook = .init(url: "http://127.0.0.1:9/hooks", secret: "env:SHOP_WEBHOOK_SECRET")
            file.webhooks = .init(firstRetrySeconds: 600, pollIntervalMilliseconds: 100)
        }
        try await server.start()
        let metricsPort = try #require(try await Eventually.value { server.listeners.subtracting([server.port]).first })
        for _ in 0..<2 {
            #expect(try await server.send("POST", "/api/apple-pay/session", body: Self.sessionBody).status == 200)
        }
        let (orderId, request) = try await server.order()
        #expect(try await server.pay(orderId, request).status == 200)
        #expect(try await server.send("GET", "/no/such/page").status == 404)
        #expect(try await server.send("GET", "/metrics").status == 404, "the public port never serves the metrics")
        // Apple failing for token calls: a notification waits in the token-event inbox for its retry.
        fixture.gateway.merchantTokenFaultStatus = 503
        let notification = "/apple-pay/token-events/\(TestMaterial.merchantIdentifier)/notification/merchantToken/evt-metrics"
        #expect(try await server.send("GET", notification).status == 200)

        // The store's gauges are refreshed every second here; wait for the refresh after the payment and its webhook attempt.
        var (response, metrics) = try await Self.scrape(server, port: metricsPort)
        _ = try await Eventually.until(every: .milliseconds(200)) {
            (response, metrics) = try await Self.scrape(server, port: metricsPort)
            return metrics.value("orchard_payments", ["state": "authorized"]) == 1 && metrics.value("orchard_webhook_queue_depth") == 1
                && metrics.value("orchard_webhook_deliveries_total", ["outcome": "retry"]) == 1
                && metrics.value("orchard_token_event_queue_depth") == 1
                && metrics.value("orchard_token_event_fetches_total", ["outcome": "retry"]) == 1
        }
        #expect(response.status == 200)
        #expect(response.headers.first { $0.name.lowercased() == "content-type" }?.value.hasPrefix("text/plain; version=0.0.4") == true)

        let session = ["route": "/api/apple-pay/session", "method": "POST"]
        #expect(metrics.value("orchard_http_requests_total", session.merging(["status": "200"]) { $1 }) == 2)
        #expect(metrics.value("orchard_http_request_duration_seconds_count", session.merging(["status_class": "2xx"]) { $1 }) == 2)
        #expect(
            metrics.value("orchard_http_requests_total", ["route": "/api/apple-pay/authorize", "method": "POST", "status": "200"]) == 1)
        #expect(metrics.value("orchard_http_requests_total", ["route": "unmatched", "method": "GET", "status": "404"]) == 2)
        #expect(metrics.value("orchard_http_requests_in_flight") == 0)

        #expect(metrics.value("orchard_merchant_sessions_total", ["outcome": "success"]) == 2)
        #expect(metrics.value("orchard_apple_gateway_request_duration_seconds_count", ["call": "session"]) == 2)
        #expect(metrics.value("orchard_apple_gateway_tls_handshakes_total", ["call": "session"]) == 1, "one handshake…")
        #expect(metrics.value("orchard_apple_gateway_reused_connections_total", ["call": "session"]) == 1, "…then a reused connection")
        #expect(fixture.gateway.stats.tlsHandshakes == 1)
        #expect(metrics.matching("orchard_apple_gateway_errors_total", ["call": "session"]).isEmpty)
        #expect(metrics.value("orchard_apple_gateway_errors_total", ["call": "merchant_token", "kind": "status_5xx"]) == 1, "the 503")

        #expect(metrics.value("orchard_token_verify_duration_seconds_count") == 1)
        #expect(metrics.value("orchard_token_decrypt_duration_seconds_count") == 1)
        #expect(metrics.value("orchard_authorizations_total", ["outcome": "authorized"]) == 1)
        let authorize = ["processor": "record", "operation": "authorize"]
        #expect(metrics.value("orchard_processor_calls_total", authorize.merging(["outcome": "authorized"]) { $1 }) == 1)
        #expect(metrics.value("orchard_processor_call_duration_seconds_count", authorize) == 1)

        #expect(metrics.value("orchard_payments", ["state": "authorized"]) == 1)
        #expect(metrics.value("orchard_payments", ["state": "unknown"]) == 0)
        #expect(metrics.value("orchard_payments_unknown_oldest_age_seconds") == 0, "no payment is unknown")
        #expect(metrics.value("orchard_webhook_queue_depth") == 1)
        #expect(metrics.value("orchard_webhook_deliveries_total", ["outcome": "retry"]) == 1)
        #expect((metrics.value("orchard_webhook_oldest_pending_age_seconds") ?? -1) >= 0)
        #expect(metrics.value("orchard_token_event_queue_depth") == 1)
        #expect(metrics.value("orchard_token_event_fetches_total", ["outcome": "retry"]) == 1)
        #expect((metrics.value("orchard_token_event_oldest_pending_age_seconds") ?? -1) >= 0)
        let identity = metrics.matching("orchard_certificate_days_left", ["owner": TestMaterial.merchantIdentifier, "kind": "identity"])
        #expect(identity.count == 1 && (identity.first?.value ?? 0) > 30, "\(identity)")

        // No series is labelled with an order, payment or path of its own.
        let text = metrics.samples.flatMap(\.labels.values).joined(separator: " ")
        #expect(!text.contains(orderId) && !text.contains("/no/such/page"))
        await fixture.gateway.stop()
    }

    @Test("the guard's series: counts by check and state, per-record series for configured merchants, the last pass")
    func guardSeries() async throws {
        // The merchant's domain is this machine's own name: the guard fetches it on loopback
        // (nothing serves https there, so the check fails: unconfirmed on the first look).
        let server = try ServerProcess(processorURL: nil) { file in
            file.metrics = .init(host: "127.0.0.1", port: 0, refreshIntervalSeconds: 1)
            file.merchants[0].domains = ["localhost"]
            file.guard = .init(enabled: true, intervalSeconds: 600, recheckSeconds: 300)
        }
        try await server.start()
        defer { Task { await server.stop() } }
        let metricsPort = try #require(try await Eventually.value { server.listeners.subtracting([server.port]).first })
        let identity = ["merchant": TestMaterial.merchantIdentifier, "check": "identity_certificate"]
        let metrics = try #require(
            try await Eventually.value { () async throws -> Exposition? in
                let metrics = try await Self.scrape(server, port: metricsPort).metrics
                return (metrics.value("orchard_guard_last_pass_timestamp_seconds") ?? 0) > 0 ? metrics : nil
            })
        #expect(metrics.value("orchard_guard_records", ["check": "identity_certificate", "state": "ok"]) == 1)
        #expect(metrics.value("orchard_guard_records", ["check": "domain_file", "state": "pending"]) == 1)
        #expect(metrics.value("orchard_guard_records", ["check": "registration", "state": "failing"]) == 0)
        #expect(metrics.matching("orchard_guard_failing", identity).map(\.value) == [0])
        #expect((metrics.matching("orchard_guard_certificate_days_left", identity).first?.value ?? 0) > 30)
        #expect(metrics.value("orchard_guard_checks_total", ["check": "domain_file", "outcome": "failing"]) == 1)
        #expect(metrics.value("orchard_guard_checks_total", ["check": "identity_certificate", "outcome": "ok"]) == 1)
    }
}
