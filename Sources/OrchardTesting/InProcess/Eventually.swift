/// How tests wait for something the code under test will do: by checking for it until it is
/// seen, never by sleeping for a time chosen to be "long enough".
///
/// The deadline only ends a test whose event never comes. It is generous on purpose: on a
/// loaded two-core machine running the whole suite, a background pass that normally takes
/// milliseconds has been seen to take tens of seconds, and a test that has already seen its
/// event returns at once.
public enum Eventually {
    /// The default bound on a wait: long enough that only a broken behaviour reaches it.
    public static let patience: Duration = .seconds(60)

    /// Checks `condition` until it holds (true) or `timeout` has passed (false, after a last check).
    public static func until(
        timeout: Duration = patience, every interval: Duration = .milliseconds(20), _ condition: () async throws -> Bool
    ) async throws -> Bool {
        try await value(timeout: timeout, every: interval) { try await condition() ? true : nil } ?? false
    }

    /// The first value `probe` returns that is not nil, checked until `timeout`; nil if none came.
    public static func value<T>(
        timeout: Duration = patience, every interval: Duration = .milliseconds(20), _ probe: () async throws -> T?
    ) async throws -> T? {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let value = try await probe() { return value }
            // The interval between checks, not a wait for the event: the next check comes after it.
            try await Task.sleep(for: interval)
        }
        return try await probe()
    }
}
