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
    }

    /// The `orchard` executable built beside the test bundle.
    public static var orchard: URL { executable("orchard") }

    /// The `orchard-sandbox` executable (demo, mock gateway, token mint) built beside the test bundle.
    public static var sandbox: URL { executable("orchard-sandbox") }

    /// The repository's root (this file's folder, two levels up).
    public static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

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

    /// Runs `executable` to completion, blocking the calling thread.
    public static func run(
        _ arguments: [String], environment: [String: String]? = nil, executable: URL = orchard, currentDirectory: URL? = nil
    ) throws -> Result {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        if let currentDirectory { process.currentDirectoryURL = currentDirectory }
        let errors = Pipe()
        let output = Pipe()
        process.standardError = errors
        process.standardOutput = output
        try process.run()
        // Read both pipes concurrently so neither fills up and blocks the child.
        let errorData = Mutex(Data())
        let done = DispatchSemaphore(value: 0)
        Thread {
            errorData.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() }
            done.signal()
        }.start()
        let stdout = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        done.wait()
        return Result(
            status: process.terminationStatus, stdout: [UInt8](stdout), stderr: errorData.withLock { String(decoding: $0, as: UTF8.self) })
    }

    /// ``run(_:environment:executable:currentDirectory:)`` on its own thread, so a server in the
    /// test process keeps the cooperative pool.
    public static func runAsync(_ arguments: [String], environment: [String: String]? = nil, executable: URL = orchard)
        async throws -> Result
    {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try run(arguments, environment: environment, executable: executable) }) }
                .start()
        }
    }
}
