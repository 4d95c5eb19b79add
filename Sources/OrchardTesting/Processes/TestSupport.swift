import Foundation
import Synchronization

/// A temporary folder, removed by `remove()` when a test ends.
public struct TemporaryDirectory: Sendable {
    public let url: URL

    public init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("orchard-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }

    public func write(_ name: String, _ bytes: [UInt8]) throws {
        try Data(bytes).write(to: url.appendingPathComponent(name))
    }

    public func remove() { try? FileManager.default.removeItem(at: url) }
}

/// Runs the built executables (`orchard`, `orchard-sandbox`) as child processes, for tests.
public enum OrchardProcess {
    /// What a finished process left: its exit status and both streams.
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: [UInt8]
        public var stderr: String

        /// "exit status 1", or "killed by SIGABRT": for a test's failure message.
        public var exit: String { ChildProcess.describe(status) }
    }

    /// The `orchard` executable built beside the test bundle.
    public static var orchard: URL { executable("orchard") }

    /// The `orchard-sandbox` executable (demo, mock gateway, token mint) built beside the test bundle.
    public static var sandbox: URL { executable("orchard-sandbox") }

    /// The repository's root (this file's folder, `Sources/OrchardTesting/Processes`, three levels up).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    static func executable(_ name: String) -> URL {
        let candidates = [
            Bundle.main.executableURL?.deletingLastPathComponent(),
            Bundle.main.bundleURL.deletingLastPathComponent(),
            repositoryRoot.appendingPathComponent(".build/debug"),
        ]
        for case let folder? in candidates {
            let url = folder.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return URL(fileURLWithPath: name)
    }

    /// Runs `executable` to completion on a thread of its own (`stdin` written to it first), so
    /// the test waiting for it leaves Swift's cooperative pool to the servers running beside it:
    /// on a two-core CI machine two blocked pool threads stall every async test in the process.
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL = orchard, currentDirectory: URL? = nil,
        stdin: [UInt8]? = nil
    ) async throws -> Result {
        try await offPool {
            try runBlocking(
                arguments, environment: environment, executable: executable, currentDirectory: currentDirectory, stdin: stdin)
        }
    }

    /// A program found on the `PATH` (`openssl`), run like ``run(_:environment:executable:currentDirectory:stdin:)``.
    public static func tool(_ name: String, _ arguments: [String], stdin: [UInt8]? = nil) async throws -> Result {
        try await run([name] + arguments, executable: URL(fileURLWithPath: "/usr/bin/env"), stdin: stdin)
    }

    /// ``run(_:environment:executable:currentDirectory:stdin:)`` blocking the calling thread: for
    /// work already off the pool.
    static func runBlocking(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL = orchard, currentDirectory: URL? = nil,
        stdin: [UInt8]? = nil
    ) throws -> Result {
        let child = try ChildProcess(
            executable.path, arguments, environment: environment, currentDirectory: currentDirectory?.path, stdin: stdin)
        let (stdout, stderr) = child.readToEnd()
        return Result(status: child.wait(), stdout: stdout, stderr: String(decoding: stderr, as: UTF8.self))
    }
}

/// Runs blocking work (waiting for a process, reading its pipes) on a thread of its own, off
/// Swift's cooperative pool.
public func offPool<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// Free loopback ports for the servers tests start.
public enum LoopbackPort {
    /// A loopback port nobody listens on right now; nil when no socket could be bound.
    public static func free() -> Int? {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Bool in
                bind(descriptor, address, length) == 0 && getsockname(descriptor, address, &length) == 0
            }
        }
        return bound ? Int(UInt16(bigEndian: address.sin_port)) : nil
    }

    /// The TCP ports process `pid` listens on, as the kernel reports them: its descriptors'
    /// socket inodes, matched against the listening rows of `/proc/<pid>/net/tcp` (Linux). A
    /// server told to listen on port 0 is found this way without a port chosen in advance, which
    /// another process could take before the server binds it.
    public static func listening(pid: pid_t) -> Set<Int> {
        var sockets = Set<Substring>()
        let folder = "/proc/\(pid)/fd"
        guard let directory = opendir(folder) else { return [] }
        defer { closedir(directory) }
        var target = [CChar](repeating: 0, count: 64)
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            let count = readlink(folder + "/" + name, &target, target.count - 1)
            guard count > 0 else { continue }
            let link = String(decoding: target.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            if link.hasPrefix("socket:["), link.hasSuffix("]") { sockets.insert(Substring(link.dropFirst(8).dropLast())) }
        }
        // Read to its end with read(2): Foundation's String(contentsOfFile:) stops after the first
        // page of a procfs file (4 KB, about 26 sockets), and during the whole suite the table holds
        // hundreds of connections, so a server's listening row was often not seen at all.
        let descriptor = open("/proc/\(pid)/net/tcp", O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return [] }
        let table = String(decoding: ChildProcess.readAll(descriptor), as: UTF8.self)
        close(descriptor)
        var ports = Set<Int>()
        // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …; st 0A is LISTEN.
        for row in table.split(separator: "\n").dropFirst() {
            let columns = row.split(separator: " ")
            guard columns.count > 9, columns[3] == "0A", sockets.contains(columns[9]),
                let port = columns[1].split(separator: ":").last.flatMap({ Int($0, radix: 16) })
            else { continue }
            ports.insert(port)
        }
        return ports
    }
}
