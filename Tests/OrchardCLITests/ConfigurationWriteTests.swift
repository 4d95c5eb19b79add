import Foundation
import OrchardRuntime
import OrchardTesting
import Testing

@testable import orchard

/// How `certs rotate` replaces the operator's configuration: never through a link, never over a
/// file someone put in its way, and with the original's owner, group and mode, so the service
/// still reads it after a rotation run under sudo.
@Suite("Configuration file writes")
struct ConfigurationWriteTests {
    static let original = #"{"merchants": [{"merchantIdentifier": "merchant.a"}]}"#
    static let edited = #"{"merchants": [{"merchantIdentifier": "merchant.a", "displayName": "A"}]}"#

    /// A folder with the configuration file `orchard.json` holding ``original`` at `mode`.
    static func folder(mode: mode_t = 0o640) throws -> (TemporaryDirectory, String) {
        let directory = try TemporaryDirectory()
        let path = directory.path("orchard.json")
        try Data(original.utf8).write(to: URL(fileURLWithPath: path))
        #expect(chmod(path, mode) == 0)
        return (directory, path)
    }

    static func status(_ path: String) -> stat {
        var info = stat()
        lstat(path, &info)
        return info
    }

    static func text(_ path: String) -> String? { try? String(contentsOfFile: path, encoding: .utf8) }

    @Test("the rotated configuration keeps the original's mode, even one the umask would narrow", arguments: [0o640, 0o660, 0o600])
    func keepsMode(mode: Int) throws {
        let (directory, path) = try Self.folder(mode: mode_t(mode))
        defer { directory.remove() }
        try ConfigurationEditor(bytes: Array(Self.edited.utf8)).write(
            to: path, backup: path + ".before", original: Array(Self.original.utf8))
        #expect(Self.text(path) == Self.edited)
        #expect(Self.status(path).st_mode & 0o7777 == mode_t(mode))
        #expect(Self.status(path + ".before").st_mode & 0o7777 == mode_t(mode), "the backup holds the same secrets")
    }

    @Test(
        "the rotated configuration and its backup keep the original's owner and group",
        .enabled(if: geteuid() == 0, "needs root to give the original another owner: not checked in this run"))
    func keepsOwner() throws {
        let (directory, path) = try Self.folder()
        defer { directory.remove() }
        #expect(chown(path, 1, 1) == 0)
        try ConfigurationEditor(bytes: Array(Self.edited.utf8)).write(
            to: path, backup: path + ".before", original: Array(Self.original.utf8))
        for written in [path, path + ".before"] {
            let info = Self.status(written)
            #expect(info.st_uid == 1 && info.st_gid == 1, "\(written): \(info.st_uid):\(info.st_gid)")
        }
    }

    @Test("a symbolic link as the configuration is refused: the file it points to and the link stay as they are")
    func refusesSymlink() throws {
        let (directory, path) = try Self.folder()
        defer { directory.remove() }
        let link = directory.path("link.json")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: path)
        #expect {
            try ConfigurationEditor(bytes: Array(Self.edited.utf8)).write(
                to: link, backup: link + ".before", original: Array(Self.original.utf8))
        } throws: { error in
            (error as? CommandFailure)?.message.contains("is a symbolic link") == true
        }
        #expect(Self.text(path) == Self.original)
        #expect(Self.status(link).st_mode & S_IFMT == S_IFLNK)
    }

    @Test("a file already at the temporary path (a link to another file) is neither followed nor overwritten")
    func temporaryPathTaken() throws {
        let (directory, path) = try Self.folder()
        defer { directory.remove() }
        let victim = directory.path("victim")
        try Data("keep me".utf8).write(to: URL(fileURLWithPath: victim))
        let temporary = path + ".rotate-\(getpid())"
        try FileManager.default.createSymbolicLink(atPath: temporary, withDestinationPath: victim)
        #expect(throws: CommandFailure.self) {
            try ConfigurationEditor(bytes: Array(Self.edited.utf8)).write(
                to: path, backup: path + ".before", original: Array(Self.original.utf8))
        }
        #expect(Self.text(victim) == "keep me")
        #expect(Self.text(path) == Self.original)
        #expect(Self.status(temporary).st_mode & S_IFMT == S_IFLNK, "someone else's file is left to them")
    }

    @Test("a configuration changed since the rotation read it is refused, and the change is kept")
    func changedMeanwhile() throws {
        let (directory, path) = try Self.folder()
        defer { directory.remove() }
        let changed = Self.original.replacingOccurrences(of: "merchant.a", with: "merchant.b")
        try Data(changed.utf8).write(to: URL(fileURLWithPath: path))
        #expect {
            try ConfigurationEditor(bytes: Array(Self.edited.utf8)).write(
                to: path, backup: path + ".before", original: Array(Self.original.utf8))
        } throws: { error in
            (error as? CommandFailure)?.message.contains("changed while it was being edited") == true
        }
        #expect(Self.text(path) == changed)
        #expect(!FileManager.default.fileExists(atPath: path + ".rotate-\(getpid())"))
    }
}
