import Foundation
import OrchardRuntime

/// Edits the operator's JSON configuration by byte ranges, so everything it does not change
/// (layout, key order, other merchants) stays as the operator wrote it; writes atomically and
/// keeps the previous file as a backup.
struct ConfigurationEditor {
    var bytes: [UInt8]

    struct Malformed: Error {}

    /// One member of an object: where it starts (its key) and its value's range.
    struct Member {
        var key: String
        var start: Int
        var value: Range<Int>
    }

    // MARK: reading

    func skipSpace(_ index: Int) -> Int {
        var index = index
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
        return index
    }

    /// The end of the value starting at `start` (after leading space).
    func valueEnd(_ start: Int) throws(Malformed) -> Int {
        guard start < bytes.count else { throw Malformed() }
        switch bytes[start] {
        case UInt8(ascii: "\""): return try stringEnd(start)
        case UInt8(ascii: "{"): return try members(start).end
        case UInt8(ascii: "["): return try elements(start).end
        default:
            var index = start
            while index < bytes.count, !",]} \t\r\n".utf8.contains(bytes[index]) { index += 1 }
            guard index > start else { throw Malformed() }
            return index
        }
    }

    func stringEnd(_ start: Int) throws(Malformed) -> Int {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        throw Malformed()
    }

    /// The members of the object at `start`, and the index after its `}`.
    func members(_ start: Int) throws(Malformed) -> (members: [Member], end: Int) {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "{") else { throw Malformed() }
        var members: [Member] = []
        var index = skipSpace(start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return ([], index + 1) }
        while true {
            let keyEnd = try stringEnd(index)
            guard let key = try? JSONDecoder().decode(String.self, from: Data(bytes[index..<keyEnd])) else { throw Malformed() }
            let colon = skipSpace(keyEnd)
            guard colon < bytes.count, bytes[colon] == UInt8(ascii: ":") else { throw Malformed() }
            let valueStart = skipSpace(colon + 1)
            let valueEnd = try valueEnd(valueStart)
            members.append(Member(key: key, start: index, value: valueStart..<valueEnd))
            let next = skipSpace(valueEnd)
            guard next < bytes.count else { throw Malformed() }
            if bytes[next] == UInt8(ascii: "}") { return (members, next + 1) }
            guard bytes[next] == UInt8(ascii: ",") else { throw Malformed() }
            index = skipSpace(next + 1)
        }
    }

    /// The ranges of the array's elements at `start`, and the index after its `]`.
    func elements(_ start: Int) throws(Malformed) -> (elements: [Range<Int>], end: Int) {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "[") else { throw Malformed() }
        var elements: [Range<Int>] = []
        var index = skipSpace(start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return ([], index + 1) }
        while true {
            let end = try valueEnd(index)
            elements.append(index..<end)
            let next = skipSpace(end)
            guard next < bytes.count else { throw Malformed() }
            if bytes[next] == UInt8(ascii: "]") { return (elements, next + 1) }
            guard bytes[next] == UInt8(ascii: ",") else { throw Malformed() }
            index = skipSpace(next + 1)
        }
    }

    /// The members of the merchant whose `merchantIdentifier` is `identifier`, and where its object starts.
    func merchant(_ identifier: String) throws(CommandFailure) -> (object: Int, members: [Member]) {
        let found: (object: Int, members: [Member])?
        do {
            found = try find(identifier)
        } catch {
            throw CommandFailure("the configuration is not JSON this editor can read")
        }
        guard let found else { throw CommandFailure("the configuration has no merchant \(identifier) in merchants[]") }
        return found
    }

    func find(_ identifier: String) throws(Malformed) -> (object: Int, members: [Member])? {
        let root = try members(skipSpace(0)).members
        guard let list = root.first(where: { $0.key == "merchants" }) else { return nil }
        for element in try elements(list.value.lowerBound).elements where bytes[element.lowerBound] == UInt8(ascii: "{") {
            let found = try members(element.lowerBound).members
            if let id = found.first(where: { $0.key == "merchantIdentifier" }), string(id.value) == identifier {
                return (element.lowerBound, found)
            }
        }
        return nil
    }

    func string(_ range: Range<Int>) -> String? {
        try? JSONDecoder().decode(String.self, from: Data(bytes[range]))
    }

    /// The white space before `index` back to the previous `,`, `[` or `{`: how the operator
    /// indents this list.
    func separator(before index: Int) -> [UInt8] {
        var start = index
        while start > 0, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start - 1]) { start -= 1 }
        return Array(bytes[start..<index])
    }

    // MARK: editing

    /// Appends `text` (a JSON value) to the array whose value starts at `start`.
    mutating func append(_ text: String, toArrayAt start: Int) throws(Malformed) {
        let (elements, end) = try self.elements(start)
        guard let last = elements.last else {
            bytes.replaceSubrange(start..<end, with: Array("[\(text)]".utf8))
            return
        }
        bytes.insert(contentsOf: [UInt8(ascii: ",")] + separator(before: last.lowerBound) + Array(text.utf8), at: last.upperBound)
    }

    /// Adds `"key": text` as the last member of the object at `start`.
    mutating func add(key: String, _ text: String, toObjectAt start: Int) throws(Malformed) {
        let members = try self.members(start).members
        guard let last = members.last else { throw Malformed() }
        let member = Array("\(Self.quoted(key)): \(text)".utf8)
        bytes.insert(contentsOf: [UInt8(ascii: ",")] + separator(before: last.start) + member, at: last.value.upperBound)
    }

    /// Removes the element (or member) spanning `range` out of the list `all` (in order), with its comma.
    mutating func remove(_ range: Range<Int>, from all: [Range<Int>]) {
        guard let position = all.firstIndex(of: range) else { return }
        if position + 1 < all.count {
            bytes.removeSubrange(range.lowerBound..<all[position + 1].lowerBound)
        } else if position > 0 {
            bytes.removeSubrange(all[position - 1].upperBound..<range.upperBound)
        } else {
            bytes.removeSubrange(range)
        }
    }

    /// Replaces the bytes in `range`.
    mutating func replace(_ range: Range<Int>, with text: String) {
        bytes.replaceSubrange(range, with: Array(text.utf8))
    }

    /// A string as a JSON literal.
    static func quoted(_ text: String) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return String(decoding: (try? encoder.encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }

    // MARK: writing

    /// Writes the edited file over `path` atomically (a temporary file in the same folder,
    /// flushed, then renamed), with the original's owner, group and mode, after keeping the
    /// `original` bytes at `backup` the same way. Refuses a `path` that is a symbolic link, a
    /// temporary or backup path someone else holds, and a file changed since `original` was read
    /// from it (another edit meanwhile would be lost).
    func write(to path: String, backup: String, original: [UInt8]) throws(CommandFailure) {
        let ownership = try ConfigurationOwnership.of(path)
        guard ConfigurationOwnership.contents(path) == original else {
            throw CommandFailure("\(path) changed while it was being edited; it is unchanged: run the step again")
        }
        // The backup holds the same secrets as the file: the same owner and mode.
        try ownership.replace(backup, bytes: original, mode: ownership.mode)
        let temporary = path + ".rotate-\(getpid())"
        try ownership.create(temporary, bytes: bytes, mode: ownership.mode)
        // Read again just before the rename: whatever changed the file since it was read (an
        // operator's editor, another rotation) is not overwritten.
        guard (try? ConfigurationOwnership.of(path)) == ownership, ConfigurationOwnership.contents(path) == original else {
            unlink(temporary)
            throw CommandFailure("\(path) changed while it was being edited; it is unchanged: run the step again")
        }
        guard rename(temporary, path) == 0 else {
            unlink(temporary)
            throw CommandFailure("cannot write \(path); it is unchanged")
        }
    }
}
