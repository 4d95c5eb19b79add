/// An ASN.1 INTEGER known by its value: the content octets in their shortest two's-complement
/// form. Two encodings of one number (a redundant `00` or `FF` sign octet, which some encoders
/// write and some libraries strip) compare equal; a positive and a negative number never do.
public struct ASN1IntegerValue: Sendable, Hashable {
    /// The shortest big-endian two's-complement octets of the value (at least one).
    public let octets: [UInt8]

    /// The value of an INTEGER's content octets; nil when there are none (no INTEGER is empty).
    public init?(content: some Collection<UInt8>) {
        let octets = Array(content)
        guard !octets.isEmpty else { return nil }
        // A leading 00 before a byte whose top bit is clear, or FF before one whose top bit is
        // set, repeats the sign and adds nothing to the value.
        var start = 0
        while start + 1 < octets.count,
            (octets[start] == 0x00 && octets[start + 1] & 0x80 == 0)
                || (octets[start] == 0xFF && octets[start + 1] & 0x80 != 0)
        {
            start += 1
        }
        self.octets = Array(octets[start...])
    }
}
