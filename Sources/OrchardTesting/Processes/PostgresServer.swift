import Foundation
import OrchardCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A private PostgreSQL cluster for the test process: `initdb` into a temporary folder, started
/// on a free loopback port (fsync on, as in production), stopped and removed when the process
/// exits. One per process, started by the first test that asks; each test takes a fresh
/// database of it. Never the machine's own cluster, which may not even run.
///
/// As root (CI), the cluster belongs to the `postgres` OS user (`runuser`), since PostgreSQL
/// refuses to run as root. A folder left by a test process that died (no exit handler ran) is
/// stopped and removed by the next one.
public final class PostgresServer: Sendable {
    public let port: Int
    public let folder: String
    /// The `orchard` role's password (scram-sha-256, over TCP).
    public let password: String
    public static let user = "orchard"
    let binaries: String
    /// The server's command-line options (`pg_ctl -o`), to start it again the same way.
    let options: String

    private init(port: Int, folder: String, password: String, binaries: String, options: String) {
        self.port = port
        self.folder = folder
        self.password = password
        self.binaries = binaries
        self.options = options
    }

    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    // MARK: The shared cluster

    private static let starting = Mutex<Task<PostgresServer, any Error>?>(nil)

    /// The process's cluster, started on first use (off the cooperative pool: it waits for processes).
    public static func shared() async throws -> PostgresServer {
        let task = starting.withLock { task in
            if let task { return task }
            let started = Task { try await offPool { try PostgresServer.start() } }
            task = started
            return started
        }
        return try await task.value
    }

    /// Tests holding a database at once: the rest wait their turn, so the cluster's work comes
    /// in a trickle beside the other tests (some of which have deadlines) on a small machine.
    static let slots = Slots(3)

    /// Runs `body` on a new, empty database, dropped afterwards; waits for a slot first.
    public func withDatabase<T>(poolSize: Int = 8, _ body: (PostgresSettings) async throws -> T) async throws -> T {
        await Self.slots.acquire()
        let settings: PostgresSettings
        do {
            settings = try await createDatabase(poolSize: poolSize)
        } catch {
            Self.slots.release()
            throw error
        }
        do {
            let result = try await body(settings)
            await dropDatabase(settings.database)
            Self.slots.release()
            return result
        } catch {
            await dropDatabase(settings.database)
            Self.slots.release()
            throw error
        }
    }

    /// A new, empty database (`t_` and 16 hex digits) and the settings that reach it.
    public func createDatabase(poolSize: Int = 8) async throws -> PostgresSettings {
        let name = "t_" + RecordIdentifier.random().prefix(16)
        _ = try await offPool { try self.psql("CREATE DATABASE \(name)") }
        return PostgresSettings(
            endpoint: .tcp(host: "127.0.0.1", port: port), database: name, user: Self.user, password: Secret(password), poolSize: poolSize)
    }

    /// Drops a database `createDatabase` made, closing whatever is still connected to it.
    public func dropDatabase(_ name: String) async {
        _ = try? await offPool { try self.psql("DROP DATABASE IF EXISTS \(name) WITH (FORCE)") }
    }

    /// Runs SQL in `database` with psql; its output unaligned, without headers, trimmed.
    @discardableResult
    public func query(_ database: String, _ sql: String) async throws -> String {
        try await offPool { try self.psql(sql, database: database) }
    }

    @discardableResult
    private func psql(_ sql: String, database: String = "postgres") throws -> String {
        let child = try ChildProcess(
            binaries + "/psql",
            [
                "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", "\(port)", "-U", Self.user, "-d", database, "-c",
                sql,
            ],
            environment: ["PGPASSWORD": password, "PATH": "/usr/bin:/bin", "PGCONNECT_TIMEOUT": "10"])
        let (output, errors) = child.readToEnd()
        guard child.wait() == 0 else {
            throw Failure(description: "psql \(sql): \(String(decoding: errors, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    // MARK: Starting and stopping

    static let folderPrefix = "orchard-pg-"

    /// A cluster of its own (not the shared one), for a test that changes the server's settings:
    /// `files` are written into its data folder (owned by the server's user, mode 0600) and
    /// `settings` are passed as `-c name=value`. The caller stops it with ``stop()``.
    public static func dedicated(settings: [String: String], files: [String: [UInt8]] = [:]) async throws -> PostgresServer {
        try await offPool { try PostgresServer.start(settings: settings, files: files) }
    }

    /// Stops a dedicated cluster's server as an operator or a failover does (`pg_ctl stop -m
    /// fast`: open connections are closed, new ones refused), keeping its data for ``resume()``.
    public func halt() async throws {
        try await offPool {
            try Self.run(self.binaries + "/pg_ctl", ["-D", self.folder + "/data", "-m", "fast", "-w", "-t", "30", "stop"])
        }
    }

    /// Starts a halted server again, on the same port with the same settings.
    public func resume() async throws {
        try await offPool {
            try Self.run(
                self.binaries + "/pg_ctl",
                ["-D", self.folder + "/data", "-l", self.folder + "/log", "-w", "-t", "60", "-o", self.options, "start"])
        }
    }

    /// Stops a dedicated cluster and removes its folder.
    public func stop() {
        Self.stop(folder: folder, binaries: binaries)
        Self.toStop.withLock { $0.removeAll { $0.folder == folder } }
    }

    private static func start(settings: [String: String] = [:], files: [String: [UInt8]] = [:]) throws -> PostgresServer {
        let binaries = try findBinaries()
        removeAbandoned(binaries: binaries)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(folderPrefix + UUID().uuidString).path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        try Data("\(getpid())".utf8).write(to: URL(fileURLWithPath: folder + "/owner"))
        let password = RecordIdentifier.random()
        try Data(password.utf8).write(to: URL(fileURLWithPath: folder + "/password"))
        do {
            try handOver(folder)
            try run(
                binaries + "/initdb",
                [
                    "-D", folder + "/data", "-U", user, "--pwfile=\(folder)/password", "-A", "scram-sha-256", "-E", "UTF8",
                    "--locale=C", "--no-sync",
                ])
            for (name, bytes) in files { try writeOwned(bytes, to: folder + "/data/" + name) }
            let extra = settings.sorted { $0.key < $1.key }.map { " -c \($0.key)=\($0.value)" }.joined()
            var lastError: (any Error)?
            for _ in 0..<5 {
                let port = try freePort()
                let options = "-p \(port) -k \(folder) -c listen_addresses=127.0.0.1 -c fsync=on -c max_connections=300" + extra
                do {
                    try run(
                        binaries + "/pg_ctl", ["-D", folder + "/data", "-l", folder + "/log", "-w", "-t", "60", "-o", options, "start"])
                    stopAtExit(folder: folder, binaries: binaries)
                    return PostgresServer(port: port, folder: folder, password: password, binaries: binaries, options: options)
                } catch {
                    lastError = error  // most likely the port was taken meanwhile
                }
            }
            throw lastError ?? Failure(description: "PostgreSQL did not start")
        } catch {
            let log = (try? String(contentsOfFile: folder + "/log", encoding: .utf8)).map { "\n" + $0.suffix(2000) } ?? ""
            try? FileManager.default.removeItem(atPath: folder)
            throw Failure(description: "the test PostgreSQL cluster did not start: \(error)\(log)")
        }
    }

    /// The newest `/usr/lib/postgresql/<version>/bin` with the server in it.
    static func findBinaries() throws -> String {
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        for version in versions where FileManager.default.isExecutableFile(atPath: "\(root)/\(version)/bin/postgres") {
            return "\(root)/\(version)/bin"
        }
        throw Failure(
            description: """
                PostgreSQL is not installed (no \(root)/<version>/bin/postgres): scripts/test installs it (or \
                `apt-get install postgresql`), or set ORCHARD_SKIP_POSTGRES=1 to leave the PostgreSQL cases out
                """)
    }

    private static var isRoot: Bool { geteuid() == 0 }

    /// A file only the server's user reads (PostgreSQL refuses a key file others can read).
    private static func writeOwned(_ bytes: [UInt8], to path: String) throws {
        guard FileManager.default.createFile(atPath: path, contents: Data(bytes), attributes: [.posixPermissions: 0o600]) else {
            throw Failure(description: "cannot write \(path)")
        }
        guard isRoot else { return }
        guard let account = getpwnam("postgres"), chown(path, account.pointee.pw_uid, account.pointee.pw_gid) == 0 else {
            throw Failure(description: "cannot hand \(path) to the postgres user (errno \(errno))")
        }
    }

    /// As root, the folder becomes the `postgres` user's, since the server will not run as root.
    private static func handOver(_ folder: String) throws {
        guard isRoot else { return }
        guard let account = getpwnam("postgres") else {
            throw Failure(description: "running as root needs the postgres OS user (the postgresql package creates it)")
        }
        for path in [folder, folder + "/owner", folder + "/password"] where chown(path, account.pointee.pw_uid, account.pointee.pw_gid) != 0
        {
            throw Failure(description: "cannot hand \(path) to the postgres user (errno \(errno))")
        }
    }

    /// Runs a PostgreSQL program (as the postgres user when root) and waits for it. It runs
    /// niced (and so does the server pg_ctl starts): on a small CI machine the cluster must not
    /// starve the tests that run beside it with deadlines of their own.
    static func run(_ executable: String, _ arguments: [String]) throws {
        let niced = ["/usr/bin/nice", "-n", "10", executable] + arguments
        let (program, list) = isRoot ? (runuser, ["-u", "postgres", "--"] + niced) : (niced[0], Array(niced.dropFirst()))
        let child = try ChildProcess(program, list, environment: ["PATH": "/usr/bin:/bin", "LC_ALL": "C"])
        let (output, errors) = child.readToEnd()
        let status = child.wait()
        guard status == 0 else {
            let text = String(decoding: errors + output, as: UTF8.self).suffix(2000)
            throw Failure(description: "\(URL(fileURLWithPath: executable).lastPathComponent) exited with \(status): \(text)")
        }
    }

    private static var runuser: String {
        ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "/usr/sbin/runuser"
    }

    /// A loopback port nobody listens on right now.
    public static func freePort() throws -> Int {
        guard let port = LoopbackPort.free() else {
            throw Failure(description: "no free loopback port (socket or bind failed: errno \(errno))")
        }
        return port
    }

    /// Clusters of test processes that are gone: stopped at once, their folders removed.
    private static func removeAbandoned(binaries: String) {
        let temporary = FileManager.default.temporaryDirectory.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? [] where name.hasPrefix(folderPrefix) {
            let folder = temporary + "/" + name
            guard let text = try? String(contentsOfFile: folder + "/owner", encoding: .utf8), let owner = pid_t(text),
                kill(owner, 0) != 0, errno == ESRCH
            else { continue }
            stop(folder: folder, binaries: binaries, mode: "immediate")
        }
    }

    static func stop(folder: String, binaries: String, mode: String = "fast") {
        if FileManager.default.fileExists(atPath: folder + "/data/postmaster.pid") {
            try? run(binaries + "/pg_ctl", ["-D", folder + "/data", "-m", mode, "-w", "-t", "30", "stop"])
        }
        try? FileManager.default.removeItem(atPath: folder)
    }

    private static let toStop = Mutex<[(folder: String, binaries: String)]>([])

    private static func stopAtExit(folder: String, binaries: String) {
        let first = toStop.withLock { list in
            list.append((folder, binaries))
            return list.count == 1
        }
        guard first else { return }
        atexit {
            for cluster in PostgresServer.toStop.withLock({ $0 }) {
                PostgresServer.stop(folder: cluster.folder, binaries: cluster.binaries)
            }
        }
    }

    final class Slots: Sendable {
        private let state: Mutex<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

        init(_ count: Int) { state = Mutex((count, [])) }

        func acquire() async {
            await withCheckedContinuation { continuation in
                let granted = state.withLock { state -> Bool in
                    guard state.free > 0 else {
                        state.waiting.append(continuation)
                        return false
                    }
                    state.free -= 1
                    return true
                }
                if granted { continuation.resume() }
            }
        }

        func release() {
            let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard !state.waiting.isEmpty else {
                    state.free += 1
                    return nil
                }
                return state.waiting.removeFirst()
            }
            next?.resume()
        }
    }

}
