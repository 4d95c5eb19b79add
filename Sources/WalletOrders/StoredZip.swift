import Foundation

/// Writes a zip archive whose entries are stored, not compressed (method 0, APPNOTE 6.3.10).
///
/// A Wallet order package is a handful of small files, the largest a PNG that is compressed
/// already, so deflate would save little; storing keeps the writer small enough to check by
/// eye, and the output is the same bytes for the same input (the time is the caller's).
public struct StoredZip: Sendable {
    /// One file: a relative path with `/` separators, and its bytes.
    public struct Entry: Sendable, Equatable {
        public var path: String
        public var bytes: [UInt8]
        public init(path: String, bytes: [UInt8]) {
            self.path = path
            self.bytes = bytes
        }
    }

    /// Why an archive cannot be written.
    public enum Failure: Error, Equatable {
        /// A path that is empty, absolute, has `..`, a backslash, or is longer than 1,024 bytes.
        case badPath(String)
        /// Two entries with one path.
        case duplicatePath(String)
        /// Past what a zip without ZIP64 holds: 65,535 entries, 4 GiB in all.
        case tooLarge
    }

    /// The archive holding `entries` in their order, each stamped `modified` (UTC, to the two seconds DOS time keeps).
    public static func archive(_ entries: [Entry], modified: Date) throws(Failure) -> [UInt8] {
        guard entries.count < 0xFFFF else { throw .tooLarge }
        var seen = Set<String>()
        for entry in entries {
            guard isSafe(entry.path) else { throw .badPath(entry.path) }
            guard seen.insert(entry.path).inserted else { throw .duplicatePath(entry.path) }
        }
        let total = entries.reduce(0) { $0 + $1.bytes.count + 2 * $1.path.utf8.count + 76 } + 22
        guard total < 0xFFFF_FFFF else { throw .tooLarge }
        let (time, date) = dosTimeAndDate(modified)
        var out: [UInt8] = []
        out.reserveCapacity(total)
        var central: [UInt8] = []
        for entry in entries {
            let name = Array(entry.path.utf8)
            let crc = CRC32.checksum(entry.bytes)
            let offset = UInt32(out.count)
            // Local file header.
            out.appendLE(UInt32(0x0403_4B50))
            appendCommon(to: &out, name: name, crc: crc, size: UInt32(entry.bytes.count), time: time, date: date)
            out += name
            out += entry.bytes
            // Its central directory record.
            central.appendLE(UInt32(0x0201_4B50))
            central.appendLE(UInt16(20))  // made by: MS-DOS attributes, version 2.0
            appendCommon(to: &central, name: name, crc: crc, size: UInt32(entry.bytes.count), time: time, date: date)
            central.appendLE(UInt16(0))  // comment length
            central.appendLE(UInt16(0))  // disk number start
            central.appendLE(UInt16(0))  // internal attributes
            central.appendLE(UInt32(0))  // external attributes
            central.appendLE(offset)
            central += name
        }
        let centralOffset = UInt32(out.count)
        out += central
        // End of central directory.
        out.appendLE(UInt32(0x0605_4B50))
        out.appendLE(UInt16(0))
        out.appendLE(UInt16(0))
        out.appendLE(UInt16(entries.count))
        out.appendLE(UInt16(entries.count))
        out.appendLE(UInt32(central.count))
        out.appendLE(centralOffset)
        out.appendLE(UInt16(0))
        return out
    }

    /// The fields local and central headers share, from "version needed" to "extra field length".
    static func appendCommon(to out: inout [UInt8], name: [UInt8], crc: UInt32, size: UInt32, time: UInt16, date: UInt16) {
        out.appendLE(UInt16(20))  // version needed
        out.appendLE(UInt16(0x0800))  // flags: names are UTF-8
        out.appendLE(UInt16(0))  // method: stored
        out.appendLE(time)
        out.appendLE(date)
        out.appendLE(crc)
        out.appendLE(size)  // compressed size
        out.appendLE(size)  // uncompressed size
        out.appendLE(UInt16(name.count))
        out.appendLE(UInt16(0))  // extra field length
    }

    static func isSafe(_ path: String) -> Bool {
        let bytes = path.utf8
        guard !bytes.isEmpty, bytes.count <= 1024, !path.hasPrefix("/"), !path.contains("\\") else { return false }
        return !path.split(separator: "/", omittingEmptySubsequences: false).contains { $0.isEmpty || $0 == ".." || $0 == "." }
    }

    /// DOS time and date (local time by the format; written as UTC), clamped to the years DOS counts (1980–2107).
    static func dosTimeAndDate(_ date: Date) -> (UInt16, UInt16) {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC") ?? calendar.timeZone
        let parts = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second], from: date)
        let year = min(max(parts.year ?? 1980, 1980), 2107)
        let time = ((parts.hour ?? 0) << 11) | ((parts.minute ?? 0) << 5) | ((parts.second ?? 0) / 2)
        let day = ((year - 1980) << 9) | ((parts.month ?? 1) << 5) | (parts.day ?? 1)
        return (UInt16(truncatingIfNeeded: time), UInt16(truncatingIfNeeded: day))
    }
}

/// CRC-32 as zip uses it (IEEE 802.3, reflected, polynomial 0xEDB88320).
enum CRC32 {
    static let table: [UInt32] = (0..<256).map { index in
        var value = UInt32(index)
        for _ in 0..<8 { value = value & 1 == 1 ? 0xEDB8_8320 ^ (value >> 1) : value >> 1 }
        return value
    }

    static func checksum(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes { crc = table[Int((crc ^ UInt32(byte)) & 0xFF)] ^ (crc >> 8) }
        return crc ^ 0xFFFF_FFFF
    }
}

extension Array where Element == UInt8 {
    mutating func appendLE<T: FixedWidthInteger>(_ value: T) {
        Swift.withUnsafeBytes(of: value.littleEndian) { self.append(contentsOf: $0) }
    }
}

extension StoredZip {
    /// The entries of an archive this writer made (stored entries, no ZIP64), from its central
    /// directory, each checked against its CRC; nil for anything else. For tests and tools.
    public static func entries(of archive: [UInt8]) -> [Entry]? {
        func u16(_ at: Int) -> Int? { at + 2 <= archive.count ? Int(archive[at]) | Int(archive[at + 1]) << 8 : nil }
        func u32(_ at: Int) -> Int? {
            guard let low = u16(at), let high = u16(at + 2) else { return nil }
            return low | high << 16
        }
        guard archive.count >= 22, u32(archive.count - 22) == 0x0605_4B50, let count = u16(archive.count - 12),
            var offset = u32(archive.count - 6)
        else { return nil }
        var entries: [Entry] = []
        for _ in 0..<count {
            guard u32(offset) == 0x0201_4B50, u16(offset + 10) == 0, let crc = u32(offset + 16), let size = u32(offset + 20),
                let nameLength = u16(offset + 28), let extra = u16(offset + 30), let comment = u16(offset + 32),
                let local = u32(offset + 42), offset + 46 + nameLength <= archive.count,
                let localName = u16(local + 26), let localExtra = u16(local + 28)
            else { return nil }
            let name = String(decoding: archive[(offset + 46)..<(offset + 46 + nameLength)], as: UTF8.self)
            let start = local + 30 + localName + localExtra
            guard start + size <= archive.count else { return nil }
            let bytes = Array(archive[start..<(start + size)])
            guard CRC32.checksum(bytes) == UInt32(crc) else { return nil }
            entries.append(Entry(path: name, bytes: bytes))
            offset += 46 + nameLength + extra + comment
        }
        return entries
    }
}
