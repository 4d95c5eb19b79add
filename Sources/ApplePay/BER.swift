/// One BER element of a buffer, by position: a payment token's signature is read in place,
/// without building a tree of nodes (which cost more than the rest of the CMS checks together).
struct BERElement {
    /// The identifier octet: class, constructed bit and a tag number below 31.
    var tag: UInt8
    /// The content octets (an indefinite length's end-of-contents excluded).
    var content: Range<Int>
    /// The whole element, identifier to end.
    var encoding: Range<Int>
    /// Whether the length was indefinite (BER only: DER forbids it).
    var indefinite: Bool

    var constructed: Bool { tag & 0x20 != 0 }
}

/// A bounds-checked BER reader over one buffer (X.690): definite and indefinite lengths,
/// low tag numbers only (all that CMS uses).
struct BERReader {
    struct Failure: Error {
        var why: String

        static func malformed(_ why: String) -> Failure { Failure(why: why) }
    }

    let bytes: [UInt8]
    /// SwiftASN1's limit, kept so that nesting cannot exhaust the stack.
    static let maximumDepth = 50

    /// The single element the buffer holds (its nested elements unchecked): nothing may follow it.
    func root() throws(Failure) -> BERElement {
        let root = try element(at: 0, limit: bytes.count, depth: 1)
        guard root.encoding.upperBound == bytes.count else { throw .malformed("data after the outer element") }
        return root
    }

    /// The element that starts at `offset` and ends by `limit`.
    func element(at offset: Int, limit: Int, depth: Int) throws(Failure) -> BERElement {
        guard depth <= Self.maximumDepth else { throw .malformed("nested too deeply") }
        guard offset < limit, limit - offset >= 2 else { throw .malformed("truncated element") }
        let tag = bytes[offset]
        guard tag != 0 else { throw .malformed("an end-of-contents where an element belongs") }
        guard tag & 0x1F != 0x1F else { throw .malformed("high tag numbers are not used in a token signature") }
        let first = bytes[offset + 1]
        var start = offset + 2
        if first == 0x80 {
            guard tag & 0x20 != 0 else { throw .malformed("a primitive element has an indefinite length") }
            var cursor = start
            while true {
                guard limit - cursor >= 2 else { throw .malformed("missing end-of-contents") }
                if bytes[cursor] == 0, bytes[cursor + 1] == 0 { break }
                cursor = try element(at: cursor, limit: limit, depth: depth + 1).encoding.upperBound
            }
            return BERElement(tag: tag, content: start..<cursor, encoding: offset..<(cursor + 2), indefinite: true)
        }
        var length = Int(first)
        if first > 0x80 {
            let count = Int(first & 0x7F)
            guard count <= 4, limit - start >= count else { throw .malformed("unsupported or truncated length") }
            length = 0
            for byte in bytes[start..<(start + count)] { length = length << 8 | Int(byte) }
            start += count
        }
        guard length <= limit - start else { throw .malformed("length beyond the data") }
        return BERElement(tag: tag, content: start..<(start + length), encoding: offset..<(start + length), indefinite: false)
    }

    /// Checks that every element nested in `element` is well formed, as a full BER parse would.
    func check(_ element: BERElement, depth: Int) throws(Failure) {
        guard element.constructed else { return }
        var cursor = element.content.lowerBound
        while cursor < element.content.upperBound {
            let child = try self.element(at: cursor, limit: element.content.upperBound, depth: depth + 1)
            try check(child, depth: depth + 1)
            cursor = child.encoding.upperBound
        }
    }

    /// The elements directly inside a constructed element with identifier `tag`.
    func children(of element: BERElement, tag: UInt8) throws(Failure) -> [BERElement] {
        guard element.tag == tag else { throw .malformed("expected tag \(tag), found \(element.tag)") }
        var children: [BERElement] = []
        var cursor = element.content.lowerBound
        while cursor < element.content.upperBound {
            let child = try self.element(at: cursor, limit: element.content.upperBound, depth: 2)
            children.append(child)
            cursor = child.encoding.upperBound
        }
        return children
    }

    /// An OBJECT IDENTIFIER's content octets, checked to be a minimal base-128 encoding, so that
    /// two identifiers are equal exactly when their octets are.
    func objectIdentifier(_ element: BERElement) throws(Failure) -> ArraySlice<UInt8> {
        let content = bytes[element.content]
        guard element.tag == 0x06, let last = content.last, last & 0x80 == 0 else { throw .malformed("expected an OBJECT IDENTIFIER") }
        var startsArc = true
        for byte in content {
            guard !(startsArc && byte == 0x80) else { throw .malformed("an OBJECT IDENTIFIER arc is not minimal") }
            startsArc = byte & 0x80 == 0
        }
        return content
    }

    /// An OCTET STRING's bytes, primitive or (BER) constructed.
    func octets(_ element: BERElement) throws(Failure) -> [UInt8] {
        switch element.tag {
        case 0x04: return Array(bytes[element.content])
        case 0x24:
            var out: [UInt8] = []
            for part in try children(of: element, tag: 0x24) { out += try octets(part) }
            return out
        default: throw .malformed("expected an OCTET STRING")
        }
    }
}
