import ArgumentParser

/// Helpers for `Benchmarks/bench-authorize` and `Benchmarks/bench-http`: prepares what the load needs
/// (a configuration, open orders, fresh signed tokens) and measures the baselines the scripts
/// print beside Orchard's numbers. A development tool: never part of the `orchard` binary.
@main
struct OrchardBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "orchard-bench",
        abstract: "Setup and baselines for Orchard's benchmark scripts.",
        subcommands: [AuthorizeSetup.self, AuthorizeTokens.self, SQLiteCommits.self])
}
