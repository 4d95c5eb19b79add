import OrchardCore

extension InMemoryStore {
    /// None: the in-memory double leaves the metrics gauges out, as a store that cannot count
    /// cheaply does (the gauges' handling of that is what it exercises).
    public func operationalCounts() async throws -> OperationalCounts? { nil }
    /// Memory is always there.
    public func checkAvailable() async throws {}
}
