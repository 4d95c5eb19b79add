import ArgumentParser
import CSQLite
import Foundation

/// `orchard-bench sqlite-commits`: the disk's bound on durable writes. One connection commits
/// one small row per transaction, with the settings Orchard's store uses (WAL,
/// `synchronous = FULL`: each COMMIT waits for its fsync), for `--seconds`; prints commits/s.
struct SQLiteCommits: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sqlite-commits", abstract: "Print the fsync'd SQLite commits per second this disk sustains.")

    @Option(help: "Folder for the scratch database (removed afterwards).")
    var directory: String

    @Option(help: "How long to commit.")
    var seconds: Double = 3

    func run() throws {
        let path = URL(fileURLWithPath: directory).appendingPathComponent("commit-rate-\(getpid()).sqlite").path
        defer {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        var handle: OpaquePointer?
        guard sqlite3_open(path, &handle) == SQLITE_OK, let db = handle else { throw ValidationError("cannot open \(path)") }
        defer { sqlite3_close(db) }
        func execute(_ sql: String) throws {
            guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else {
                throw ValidationError("\(sql): \(String(cString: sqlite3_errmsg(db)))")
            }
        }
        try execute("PRAGMA journal_mode = WAL")
        try execute("PRAGMA synchronous = FULL")
        try execute("CREATE TABLE rows (id INTEGER PRIMARY KEY, payload TEXT NOT NULL)")
        let clock = ContinuousClock()
        let start = clock.now
        var commits = 0
        while clock.now - start < .milliseconds(Int(seconds * 1000)) {
            try execute("INSERT INTO rows (payload) VALUES ('a payment row of about the usual size, give or take')")
            commits += 1
        }
        let elapsed = clock.now - start
        let rate = Double(commits) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        print(String(format: "%.0f", rate))
    }
}
