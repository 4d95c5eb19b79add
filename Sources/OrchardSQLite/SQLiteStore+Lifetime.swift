import OrchardCore

extension SQLiteStore {
    /// Nothing to do: the file's connection closes when the store is released.
    public func close() async {}
}
