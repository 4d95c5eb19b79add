import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A child process started with `posix_spawn`, for tests. Not Foundation's `Process`: on Linux
/// its `run()` copies whole `dirent` records while scanning `/proc/self/fd` and now and then
/// reads past a buffer and crashes the test process (swift-corelibs-foundation #5472, in
/// Swift 6.3.1; seen here in CI with ~1,400 descriptors open), and its `FileHandle` reads
/// trap on `EINTR`. Pipes are read with plain `read(2)`, retried on `EINTR`.
public final class ChildProcess: Sendable {
    /// Where the child's standard output and error go.
    public enum Output: Sendable {
        /// Two pipes, read with ``readToEnd()`` or ``readOutput(maximum:)``.
        case capture
        /// Stdout in a pipe, stderr discarded.
        case captureStdout
        case discard
        /// Both appended to this file.
        case file(String)
    }

    public let pid: pid_t
    /// The read ends of the child's stdout and stderr (−1 unless captured).
    let stdoutDescriptor: Int32
    let stderrDescriptor: Int32
    private let exit = Mutex<Int32?>(nil)
    /// The command line, for a crash report.
    let commandLine: String
    /// Where stderr goes when it is not captured: the file whose tail a crash report shows.
    let outputPath: String?
    /// What ``readToEnd()`` read of stderr, for a crash report.
    private let capturedStderr = Mutex<[UInt8]>([])
    var capturedStderrBytes: [UInt8] { capturedStderr.withLock { $0 } }

    /// Starts `executable` with `arguments`; `environment` nil inherits the test process's.
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, currentDirectory: String? = nil,
        stdin: [UInt8]? = nil, output: Output = .capture
    ) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var closeInParent: [Int32] = []
        defer { for fd in closeInParent { close(fd) } }

        var input: [Int32] = [-1, -1]
        if stdin != nil {
            guard Self.pipeCloseOnExec(&input) else { throw Self.failure("pipe") }
            posix_spawn_file_actions_adddup2(&actions, input[0], 0)
            closeInParent.append(input[0])
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        }
        var out: [Int32] = [-1, -1]
        var err: [Int32] = [-1, -1]
        switch output {
        case .capture:
            guard Self.pipeCloseOnExec(&out), Self.pipeCloseOnExec(&err) else { throw Self.failure("pipe") }
            posix_spawn_file_actions_adddup2(&actions, out[1], 1)
            posix_spawn_file_actions_adddup2(&actions, err[1], 2)
            closeInParent += [out[1], err[1]]
        case .captureStdout:
            guard Self.pipeCloseOnExec(&out) else { throw Self.failure("pipe") }
            posix_spawn_file_actions_adddup2(&actions, out[1], 1)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
            closeInParent.append(out[1])
        case .discard:
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
            posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        case .file(let path):
            posix_spawn_file_actions_addopen(&actions, 1, path, O_WRONLY | O_APPEND | O_CREAT, 0o644)
            posix_spawn_file_actions_adddup2(&actions, 1, 2)
        }
        if let currentDirectory {
            guard let addchdir = Self.addchdir else { throw SpawnError(description: "posix_spawn_file_actions_addchdir_np is missing") }
            _ = addchdir(&actions, currentDirectory)
        }
        // Nothing but 0, 1 and 2 reaches the child. SwiftNIO opens its sockets without
        // close-on-exec, so a child would otherwise keep a copy of every socket the test process
        // has open: a connection an in-process server closes stays open in the child (its client
        // never sees the close), and a stopped listener's port stays bound while the child lives.
        guard let addclosefrom = Self.addclosefrom else {
            throw SpawnError(description: "posix_spawn_file_actions_addclosefrom_np is missing (glibc 2.34 or later)")
        }
        _ = addclosefrom(&actions, 3)

        // The child starts with default signal handling and nothing blocked, whatever the test
        // process ignores (SIGPIPE) or blocks.
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        sigdelset(&defaults, SIGKILL)
        sigdelset(&defaults, SIGSTOP)
        var none = sigset_t()
        sigemptyset(&none)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &none)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let variables = (environment ?? ProcessInfo.processInfo.environment).map { "\($0.key)=\($0.value)" }
        let envp = variables.map { strdup($0) } + [nil]
        defer { for pointer in envp { free(pointer) } }

        var child: pid_t = 0
        let code = posix_spawn(&child, executable, &actions, &attributes, argv, envp)
        guard code == 0 else {
            for fd in input + out + err where fd >= 0 { close(fd) }
            closeInParent = []
            throw Self.failure("posix_spawn \(executable)", code: code)
        }
        pid = child
        stdoutDescriptor = out[0]
        stderrDescriptor = err[0]
        commandLine = ([URL(fileURLWithPath: executable).lastPathComponent] + arguments.prefix(3)).joined(separator: " ")
        if case .file(let path) = output { outputPath = path } else { outputPath = nil }
        if let stdin {
            Self.writeAll(input[1], stdin)
            close(input[1])
        }
    }

    deinit {
        if stdoutDescriptor >= 0 { close(stdoutDescriptor) }
        if stderrDescriptor >= 0 { close(stderrDescriptor) }
    }

    /// Sends `signal` to the child, if it has not been waited for.
    public func send(_ signal: Int32) {
        if exit.withLock({ $0 }) == nil { Glibc.kill(pid, signal) }
    }

    /// Whether the child still runs (reaps it once it has exited).
    public var isRunning: Bool {
        exit.withLock { status in
            guard status == nil else { return false }
            var raw: Int32 = 0
            guard waitpid(pid, &raw, WNOHANG) == pid else { return true }
            status = Self.decode(raw)
            reportCrash(Self.decode(raw))
            return false
        }
    }

    /// Waits for the child to end; its exit status, or 128 + the signal that ended it.
    @discardableResult
    public func wait() -> Int32 {
        if let done = exit.withLock({ $0 }) { return done }
        var raw: Int32 = 0
        while waitpid(pid, &raw, 0) == -1 && errno == EINTR {}
        let status = Self.decode(raw)
        let first = exit.withLock { recorded in
            defer { recorded = recorded ?? status }
            return recorded == nil
        }
        if first { reportCrash(status) }
        return exit.withLock { $0 } ?? status
    }

    /// ``wait()`` on a thread of its own, leaving the cooperative pool free meanwhile.
    @discardableResult
    public func waitOffPool() async -> Int32 {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: self.wait()) }.start()
        }
    }

    /// Both captured streams to their end (stderr read on its own thread, so neither pipe fills).
    public func readToEnd() -> (stdout: [UInt8], stderr: [UInt8]) {
        let errors = Mutex<[UInt8]>([])
        let done = DispatchSemaphore(value: 0)
        let descriptor = stderrDescriptor
        Thread {
            errors.withLock { $0 = Self.readAll(descriptor) }
            done.signal()
        }.start()
        let stdout = Self.readAll(stdoutDescriptor)
        done.wait()
        let stderr = errors.withLock { $0 }
        capturedStderr.withLock { $0 = stderr }
        return (stdout, stderr)
    }

    /// The next bytes of captured stdout (empty at its end).
    public func readOutput(maximum: Int = 4096) -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: maximum)
        while true {
            let count = read(stdoutDescriptor, &buffer, maximum)
            if count >= 0 { return Array(buffer.prefix(count)) }
            if errno != EINTR { return [] }
        }
    }

    static func readAll(_ descriptor: Int32) -> [UInt8] {
        guard descriptor >= 0 else { return [] }
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 16_384)
        while true {
            let count = read(descriptor, &buffer, buffer.count)
            if count > 0 {
                data += buffer.prefix(count)
            } else if count == 0 || errno != EINTR {
                return data
            }
        }
    }

    static func writeAll(_ descriptor: Int32, _ bytes: [UInt8]) {
        var offset = 0
        while offset < bytes.count {
            let written = bytes[offset...].withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            if written > 0 {
                offset += written
            } else if errno != EINTR {
                return
            }
        }
    }

    // glibc's GNU extensions, which the Glibc module does not declare: looked up once.
    private typealias Pipe2 = @convention(c) (UnsafeMutablePointer<Int32>, Int32) -> Int32
    private typealias AddChdir = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, UnsafePointer<CChar>) -> Int32
    private static let pipe2: Pipe2? = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "pipe2")
        .map { unsafeBitCast($0, to: Pipe2.self) }
    private typealias AddClosefrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32
    private static let addclosefrom: AddClosefrom? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np"
    ).map { unsafeBitCast($0, to: AddClosefrom.self) }
    private static let addchdir: AddChdir? = dlsym(
        UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addchdir_np"
    ).map { unsafeBitCast($0, to: AddChdir.self) }

    /// A pipe whose ends close on exec, made atomically so a child spawned by another thread
    /// at the same moment never inherits them (and never holds a reader's pipe open).
    static func pipeCloseOnExec(_ fds: inout [Int32]) -> Bool {
        guard let pipe2 else { return false }
        return fds.withUnsafeMutableBufferPointer { pipe2($0.baseAddress!, O_CLOEXEC) } == 0
    }

    static func decode(_ raw: Int32) -> Int32 {
        raw & 0x7F == 0 ? (raw >> 8) & 0xFF : 128 + (raw & 0x7F)
    }

    struct SpawnError: Error, CustomStringConvertible {
        var description: String
    }

    static func failure(_ what: String, code: Int32 = errno) -> SpawnError {
        SpawnError(description: "\(what): \(String(cString: strerror(code)))")
    }
}
