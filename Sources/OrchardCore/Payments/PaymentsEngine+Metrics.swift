import ApplePay
import Metrics

/// The engine's measurements, through swift-metrics only: whatever backend the process set up
/// (none: they cost next to nothing). Labels are bounded: processor types, operations and
/// outcomes are fixed names, never merchant or payment IDs.
enum EngineMetrics {
    /// One call to a processor: `operation` is authorize, refund, settle or cancel; `outcome` what the engine made of the answer.
    static func processorCall(processor: String, operation: String, outcome: String, elapsed: Duration) {
        Counter(
            label: "orchard_processor_calls_total",
            dimensions: [("processor", processor), ("operation", operation), ("outcome", outcome)]
        ).increment()
        Timer(label: "orchard_processor_call_duration_seconds", dimensions: [("processor", processor), ("operation", operation)])
            .recordNanoseconds(elapsed.nanoseconds)
    }

    /// Runs one token step (verify or decrypt) and records how long it took, failed or not.
    static func tokenStep<T>(_ step: String, _ body: () throws(ApplePayError) -> T) throws(ApplePayError) -> T {
        let started = ContinuousClock.now
        defer {
            Timer(label: "orchard_token_\(step)_duration_seconds").recordNanoseconds((ContinuousClock.now - started).nanoseconds)
        }
        return try body()
    }
}

extension Duration {
    /// Whole nanoseconds, saturating (a metric needs no more than 292 years).
    var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
