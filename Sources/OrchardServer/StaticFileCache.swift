import ApplePay
import Foundation
import Synchronization

/// The checkout page's small files in memory, by URL path (`/orchard.js`; a folder's
/// `index.html` also under `/` and `/folder/`). The page built into the binary never changes;
/// files from `server.publicDirectory` are checked against the disk at most once a second on
/// use, so an edited file is served within a second and a removed one stops being served.
final class StaticFileCache: Sendable {
    /// Larger files are served from the disk by `FileMiddleware`, not held here.
    static let maximumFileBytes = 1 << 20
    /// What the cache holds at most, so a large folder costs memory and startup time only up to a point.
    static let maximumFiles = 1_024
    static let maximumTotalBytes = 64 << 20
    /// How long a file from the disk is served before its size and date are looked at again.
    static let revalidateAfter: TimeInterval = 1

    struct Entry: Sendable {
        var file: StaticFile
        /// Nil for the built-in page.
        var disk: DiskFile?
        var checkedAt: Date
    }

    /// Where a cached file came from and what it looked like then.
    struct DiskFile: Sendable, Equatable {
        var path: String
        var size: Int
        var modified: Date
    }

    /// Paths no file answered, until when that answer holds; bounded, so unknown paths cannot fill memory.
    private let misses = Mutex<[String: Date]>([:])
    static let maximumMisses = 1_024
    /// The built-in page never changes: a path it lacks stays missing, and its files are read
    /// without a lock or a clock.
    private let isFixed: Bool
    private let fixedFiles: [String: StaticFile]
    private let entries: Mutex<[String: Entry]>
    private let time: TimeSource

    private init(entries: [String: Entry], time: TimeSource, isFixed: Bool) {
        self.entries = Mutex(isFixed ? [:] : entries)
        self.fixedFiles = isFixed ? entries.mapValues(\.file) : [:]
        self.time = time
        self.isFixed = isFixed
    }

    /// The page `Public/` held when this binary was built.
    static let builtIn = StaticFileCache(files: EmbeddedFileProvider.builtIn.files, modified: EmbeddedFileProvider.builtIn.modified)

    /// Files given as bytes, by path relative to the page's root (`checkout/main.js`).
    convenience init(files: [String: [UInt8]], modified: Date) {
        var entries: [String: Entry] = [:]
        for (name, bytes) in files where bytes.count <= Self.maximumFileBytes {
            let entry = Entry(file: StaticFile(bytes: bytes, name: name, modified: modified), disk: nil, checkedAt: .distantFuture)
            for key in Self.urlPaths(of: name) { entries[key] = entry }
        }
        self.init(entries: entries, time: .system, isFixed: true)
    }

    /// The small files under `folder` (symbolic links left to `FileMiddleware`).
    convenience init(folder: String, time: TimeSource) {
        var entries: [String: Entry] = [:]
        var total = 0
        let root = URL(fileURLWithPath: folder).standardizedFileURL
        let keys: [URLResourceKey] = [.isRegularFileKey, .isSymbolicLinkKey]
        let walk = FileManager.default.enumerator(at: root, includingPropertiesForKeys: keys)
        while let url = walk?.nextObject() as? URL, entries.count < Self.maximumFiles {
            let values = try? url.resourceValues(forKeys: Set(keys))
            guard values?.isRegularFile == true, values?.isSymbolicLink != true,
                let disk = Self.stat(url.path), disk.size <= Self.maximumFileBytes, total + disk.size <= Self.maximumTotalBytes,
                let bytes = FileManager.default.contents(atPath: disk.path)
            else { continue }
            let name = String(url.standardizedFileURL.path.dropFirst(root.path.count).drop { $0 == "/" })
            let entry = Entry(
                file: StaticFile(bytes: Array(bytes), name: name, modified: disk.modified), disk: disk, checkedAt: time.now)
            for key in Self.urlPaths(of: name) { entries[key] = entry }
            total += bytes.count
        }
        self.init(entries: entries, time: time, isFixed: false)
    }

    /// `index.html` answers for its folder too, as `FileMiddleware(searchForIndexHtml:)` does.
    static func urlPaths(of name: String) -> [String] {
        guard name == "index.html" || name.hasSuffix("/index.html") else { return ["/" + name] }
        return ["/" + name, "/" + name.dropLast("index.html".count)]
    }

    /// The file for a request path, if the cache holds it (and, from the disk, it is unchanged).
    func file(at path: String) -> StaticFile? {
        if isFixed { return fixedFiles[path] }
        let now = time.now
        let found = entries.withLock { entries -> (Entry, recheck: Bool)? in
            guard var entry = entries[path] else { return nil }
            guard entry.disk != nil, now.timeIntervalSince(entry.checkedAt) >= Self.revalidateAfter else { return (entry, false) }
            // One request looks at the disk; the others keep serving what is held meanwhile.
            entry.checkedAt = now
            entries[path] = entry
            return (entry, true)
        }
        guard let (entry, recheck) = found else { return nil }
        return recheck ? revalidate(entry, path: path) : entry.file
    }

    /// Whether no file answered `path` recently (the built-in page: ever).
    func isMissing(_ path: String) -> Bool {
        if isFixed { return misses.withLock { $0[path] != nil } }
        let now = time.now
        return misses.withLock { $0[path].map { now < $0 } ?? false }
    }

    /// No file answers `path`: remember it for a second (the built-in page: for good).
    func noteMissing(_ path: String) {
        let until = isFixed ? Date.distantFuture : time.now.addingTimeInterval(Self.revalidateAfter)
        misses.withLock { misses in
            if misses.count >= Self.maximumMisses { misses.removeAll() }
            misses[path] = until
        }
    }

    /// The held file if the disk still has it as it was; else the new bytes, or nil (gone or now too large).
    private func revalidate(_ entry: Entry, path: String) -> StaticFile? {
        guard let held = entry.disk else { return entry.file }
        let current = Self.stat(held.path)
        if current == held { return entry.file }
        var replacement: Entry?
        if let current, current.size <= Self.maximumFileBytes, let bytes = FileManager.default.contents(atPath: current.path) {
            replacement = Entry(
                file: StaticFile(bytes: Array(bytes), name: held.path, modified: current.modified), disk: current, checkedAt: time.now)
        }
        entries.withLock { entries in
            // Every path this file answers for (a folder's index.html has two).
            for (key, value) in entries where value.disk?.path == held.path { entries[key] = replacement }
        }
        return replacement?.file
    }

    static func stat(_ path: String) -> DiskFile? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            attributes[.type] as? FileAttributeType == .typeRegular,
            let size = (attributes[.size] as? NSNumber)?.intValue, let modified = attributes[.modificationDate] as? Date
        else { return nil }
        return DiskFile(path: path, size: size, modified: modified)
    }
}
