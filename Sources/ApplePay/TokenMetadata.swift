import Foundation

/// Apple's `EncryptedTokenMetadata` (Merchant Token Management API 1.0.12): a merchant token's
/// MPAN details, carried by a token event in `merchantTokenMetadata.encryptedTokenMetadata`.
///
/// Apple encrypts it to the merchant's processing key exactly as a payment token's `data`, and
/// signs it the same way, over the key material and the data alone. It has no version field and
/// no transaction ID: the scheme is told by which of `ephemeralPublicKey` (EC_v1) and
/// `wrappedKey` (RSA_v1) is present.
public struct EncryptedTokenMetadata: Sendable, Codable, Equatable {
    /// base64 ciphertext with its GCM tag.
    public var data: String?
    /// EC_v1: the ephemeral public key (base64 SubjectPublicKeyInfo).
    public var ephemeralPublicKey: String?
    /// RSA_v1: the wrapped symmetric key (base64).
    public var wrappedKey: String?
    /// base64 SHA-256 of the processing certificate's SubjectPublicKeyInfo.
    public var publicKeyHash: String?
    /// base64 detached CMS signature, with Apple's leaf and intermediate certificates.
    public var signature: String?

    public init(
        data: String?, ephemeralPublicKey: String? = nil, wrappedKey: String? = nil, publicKeyHash: String?, signature: String?
    ) {
        self.data = data
        self.ephemeralPublicKey = ephemeralPublicKey
        self.wrappedKey = wrappedKey
        self.publicKeyHash = publicKeyHash
        self.signature = signature
    }

    enum CodingKeys: String, CodingKey { case data, ephemeralPublicKey, wrappedKey, publicKeyHash, signature }

    /// Reads any object: a field that is not a string is taken as absent, so that ``decoded()``
    /// names what is wrong instead of the whole event failing to read.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        func text(_ key: CodingKeys) -> String? { (try? container.decodeIfPresent(String.self, forKey: key)) ?? nil }
        self.init(
            data: text(.data), ephemeralPublicKey: text(.ephemeralPublicKey), wrappedKey: text(.wrappedKey),
            publicKeyHash: text(.publicKeyHash), signature: text(.signature))
    }

    /// The decoded binary fields, in the form ``TokenVerifier`` and ``TokenDecryptor`` take for a
    /// payment token: no transaction ID nor application data, so the signed content is
    /// key material ‖ data. Every refusal names the field.
    public func decoded() throws(ApplePayError) -> PaymentData.Decoded {
        let scheme: PaymentData.Scheme
        let keyMaterial: [UInt8]
        switch (ephemeralPublicKey, wrappedKey) {
        case (let key?, nil):
            scheme = .ecV1
            keyMaterial = try PaymentData.base64(key, "encryptedTokenMetadata.ephemeralPublicKey")
        case (nil, let key?):
            scheme = .rsaV1
            keyMaterial = try PaymentData.base64(key, "encryptedTokenMetadata.wrappedKey")
        case (.some, .some):
            throw ApplePayError(.malformedToken, "encryptedTokenMetadata has both ephemeralPublicKey and wrappedKey: exactly one must be")
        case (nil, nil):
            throw ApplePayError(
                .malformedToken, "encryptedTokenMetadata has neither ephemeralPublicKey nor wrappedKey: exactly one must be")
        }
        let data = try PaymentData.base64(data, "encryptedTokenMetadata.data")
        guard data.count > 16 else { throw ApplePayError(.malformedToken, "encryptedTokenMetadata.data is too short to hold a GCM tag") }
        return PaymentData.Decoded(
            scheme: scheme, data: data, signature: try PaymentData.base64(signature, "encryptedTokenMetadata.signature"),
            keyMaterial: keyMaterial, publicKeyHash: try PaymentData.base64(publicKeyHash, "encryptedTokenMetadata.publicKeyHash"),
            transactionId: [], applicationData: nil)
    }

    /// Verifies and opens it as a payment token is: Apple's chain and signer, the digest over
    /// key material ‖ data, the signing time against `now` under `verifier`'s policy (see
    /// ``TokenVerifier/Policy/tokenMetadata``), then decryption with the configured key it names,
    /// and the plaintext read and checked. The MPAN itself goes no further than this call.
    public func open(verifier: TokenVerifier, decryptor: TokenDecryptor, at now: Date) throws(ApplePayError) -> TokenMetadata {
        let verified = try verifier.verify(try decoded(), at: now)
        var plaintext = try decryptor.plaintext(verified.decoded)
        defer { plaintext.withUnsafeMutableBytes { _ = $0.initializeMemory(as: UInt8.self, repeating: 0) } }
        return try TokenMetadata(json: plaintext, signingTime: verified.signingTime)
    }
}

extension TokenVerifier.Policy {
    /// Token events' metadata. Apple signs it when it makes the event, and Orchard may fetch the
    /// event up to 72 hours after Apple's notification (the token-event inbox retries that long
    /// while Apple's gateway is unreachable): so a week, not a payment token's five minutes. It
    /// still bounds how old a signed metadata can be; the clock skew allowed is a payment's.
    public static let tokenMetadata = Self(maximumAge: 7 * 86_400, maximumFutureSkew: 60)
}

/// Apple's `TokenMetadata`, decrypted and checked, keeping of the MPAN only its last four digits.
/// Its description shows the expiry and those four digits.
public struct TokenMetadata: Sendable, Equatable, CustomStringConvertible {
    /// The MPAN's expiry as Apple writes it, `YYMMDD` (the day is the month's last).
    public var expirationDate: String
    /// The expiry's year (four digits) and month (1–12).
    public var expirationYear: Int
    public var expirationMonth: Int
    /// The MPAN's last four digits.
    public var mpanSuffix: String
    /// The new MPAN's identifier, which Apple sends only when the MPAN changed: 1–64 of
    /// `A-Z a-z 0-9 . _ -`.
    public var mpanId: String?
    /// When Apple signed it.
    public var signingTime: Date

    /// The plaintext as Apple documents it; the MPAN's digits are read for their count and last four only.
    private struct Plaintext: Decodable {
        var expirationDate: String
        var mpan: String
        var mpanId: String?
    }

    /// Reads and checks decrypted metadata. A refusal never quotes the plaintext.
    public init(json: [UInt8], signingTime: Date) throws(ApplePayError) {
        let plaintext: Plaintext
        do {
            plaintext = try JSONDecoder().decode(Plaintext.self, from: Data(json))
        } catch {
            throw ApplePayError(.invalidPlaintext, "the decrypted token metadata is not the TokenMetadata JSON Apple documents")
        }
        guard let expiry = Self.expiry(plaintext.expirationDate) else {
            throw ApplePayError(.invalidPlaintext, "the token metadata's expirationDate is not a date written YYMMDD")
        }
        guard Self.isDigits(plaintext.mpan, count: 12...19) else {
            throw ApplePayError(.invalidPlaintext, "the token metadata's mpan is not 12 to 19 digits")
        }
        if let mpanId = plaintext.mpanId, !Self.isIdentifier(mpanId) {
            throw ApplePayError(.invalidPlaintext, "the token metadata's mpanId is not 1 to 64 of A-Z a-z 0-9 . _ -")
        }
        expirationDate = plaintext.expirationDate
        expirationYear = expiry.year
        expirationMonth = expiry.month
        mpanSuffix = String(plaintext.mpan.suffix(4))
        mpanId = plaintext.mpanId
        self.signingTime = signingTime
    }

    /// `YYMMDD` as a real calendar date of 2000–2099: its year and month.
    static func expiry(_ text: String) -> (year: Int, month: Int)? {
        let digits = Array(text.utf8)
        guard isDigits(text, count: 6...6) else { return nil }
        func number(_ at: Int) -> Int { Int(digits[at] - 0x30) * 10 + Int(digits[at + 1] - 0x30) }
        let (year, month, day) = (2000 + number(0), number(2), number(4))
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        return (year, month)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static func isDigits(_ text: String, count: ClosedRange<Int>) -> Bool {
        count.contains(text.utf8.count) && text.utf8.allSatisfy { (0x30...0x39).contains($0) }
    }

    /// 1–64 of `A-Z a-z 0-9 . _ -`, as Apple's other token identifiers.
    static func isIdentifier(_ text: String) -> Bool {
        (1...64).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                    || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
            }
    }

    public var description: String {
        "TokenMetadata(expires \(expirationYear)-\(expirationMonth < 10 ? "0" : "")\(expirationMonth), MPAN ••••\(mpanSuffix))"
    }
}
