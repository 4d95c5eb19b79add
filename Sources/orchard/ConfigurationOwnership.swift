import CoreFoundation
import Foundation
import OrchardRuntime

#if canImport(Glibc)
    import Glibc
#endif

/// The configuration file's owner, group and mode, which everything `certs rotate` writes for the
/// service takes on: run under sudo, a rotation must not hand the configuration or the new keys to
/// root, or the service (which reads them as its own user) could no longer start.
struct ConfigurationOwnership: Equatable {
    var owner: uid_t
    var group: gid_t
    /// The permission bits (`0o640`).
    var mode: mode_t

    /// The configuration at `path`, which must be a regular file: a symbolic link is refused, since
    /// replacing it would write a file of the rotation's own where the link was.
    static func of(_ path: String) throws(CommandFailure) -> ConfigurationOwnership {
        var info = stat()
        guard lstat(path, &info) == 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        if info.st_mode & S_IFMT == S_IFLNK {
            let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            throw CommandFailure(
                "\(path) is a symbolic link: certs rotate replaces the configuration file itself, so give --config \(target)")
        }
        guard info.st_mode & S_IFMT == S_IFREG else { throw CommandFailure("\(path) is not a regular file") }
        return ConfigurationOwnership(owner: info.st_uid, group: info.st_gid, mode: info.st_mode & 0o7777)
    }

    /// A private key's mode beside this configuration: 0600, and readable by the group as well
    /// when the configuration is (the service then reads both through its group). Never more.
    var keyMode: mode_t { 0o600 | (mode & 0o040) }

    /// Gives the open file this owner and group (when they differ from its own: only root may
    /// give a file away) and `mode`, set after the owner since a change of owner may clear bits.
    func apply(to descriptor: Int32, mode: mode_t?, path: String) throws(CommandFailure) {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw CommandFailure("cannot read \(path): \(String(cString: strerror(errno)))") }
        if info.st_uid != owner || info.st_gid != group, fchown(descriptor, owner, group) != 0 {
            throw CommandFailure(
                "cannot give \(path) the configuration's owner \(owner):\(group) (\(String(cString: strerror(errno)))): run the step as that user or as root"
            )
        }
        if let mode, fchmod(descriptor, mode) != 0 {
            throw CommandFailure("cannot set \(path)'s mode: \(String(cString: strerror(errno)))")
        }
    }

    /// The same for a file or folder the rotation made at `path`, opened without following a link.
    func apply(toPath path: String, mode: mode_t? = nil) throws(CommandFailure) {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw CommandFailure("cannot open \(path): \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        try apply(to: descriptor, mode: mode, path: path)
    }

    /// Creates `path` anew with `bytes`, this owner and `mode`, flushed to disk. `O_EXCL` and
    /// `O_NOFOLLOW`: a file or link someone else put at `path` is neither followed nor
    /// overwritten, and is left to them.
    func create(_ path: String, bytes: [UInt8], mode: mode_t) throws(CommandFailure) {
        // Created private; the mode is set once the owner is right.
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let reason = errno == EEXIST ? "a file is already there; remove it if no rotation is running" : String(cString: strerror(errno))
            throw CommandFailure("cannot create \(path): \(reason); nothing was changed")
        }
        var written = false
        defer {
            close(descriptor)
            if !written { unlink(path) }
        }
        try apply(to: descriptor, mode: mode, path: path)
        let count = bytes.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
        guard count == bytes.count, fsync(descriptor) == 0 else { throw CommandFailure("cannot write \(path); nothing was changed") }
        written = true
    }

    /// `create`, after removing what is at `path` (a link is removed, never followed): for a file
    /// of the rotation's own that a step stopped midway may have left.
    func replace(_ path: String, bytes: [UInt8], mode: mode_t) throws(CommandFailure) {
        if unlink(path) != 0, errno != ENOENT {
            throw CommandFailure("cannot replace \(path): \(String(cString: strerror(errno)))")
        }
        try create(path, bytes: bytes, mode: mode)
    }

    /// The file at `path` as it is now, read without following a link; nil when it cannot be.
    static func contents(_ path: String) -> [UInt8]? {
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            guard count >= 0 else { return nil }
            if count == 0 { return bytes }
            bytes += buffer[..<count]
        }
    }
}
