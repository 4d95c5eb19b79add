import Hummingbird
import Logging
import Metrics
import OrchardConfiguration
import OrchardServer
import Prometheus

/// The Prometheus side of the metrics: the registry every swift-metrics call in the process
/// records into, and the small listener that serves it. The rest of Orchard sees swift-metrics only.
public enum PrometheusMetrics {
    /// The process's registry, set up as swift-metrics' backend on first use. swift-metrics takes
    /// one backend per process, once: every later use returns the same registry.
    public static let registry: PrometheusCollectorRegistry = {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Calls to Apple and processors may take up to their 29 s timeouts; the default buckets stop at 10 s.
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250),
            .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(25),
        ]
        // Token verification and decryption take about a millisecond.
        let fine: [Duration] = [
            .microseconds(250), .microseconds(500), .milliseconds(1), .microseconds(2500), .milliseconds(5), .milliseconds(10),
            .milliseconds(25), .milliseconds(50),
        ]
        factory.durationHistogramBuckets = ["orchard_token_verify_duration_seconds": fine, "orchard_token_decrypt_duration_seconds": fine]
        MetricsSystem.bootstrap(factory)
        return registry
    }()

    /// `GET /metrics` in the Prometheus text format on its own address, and nothing else: the
    /// public port never serves it. Runs in the server's service group, stopped last.
    public static func application(
        listener: MetricsListener, registry: PrometheusCollectorRegistry, logger: Logger
    ) -> some ApplicationProtocol {
        let router = Router()
        router.get("/metrics") { _, _ in
            Response(
                status: .ok,
                headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8", .cacheControl: "no-store"],
                body: ResponseBody(byteBuffer: ByteBuffer(bytes: registry.emitToBuffer())))
        }
        return Application(
            router: router,
            configuration: .init(address: .hostname(listener.host, port: listener.port), serverName: "Orchard metrics"),
            logger: logger)
    }
}
