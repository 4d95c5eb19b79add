import Crypto
import Foundation

/// The payment token Safari hands to `onpaymentauthorized` (`event.payment.token`).
public struct PaymentToken: Sendable, Codable, Equatable {
    public var paymentData: PaymentData
    public var paymentMethod: PaymentMethod?
    public var transactionIdentifier: String?

    public struct PaymentMethod: Sendable, Codable, Equatable {
        public var displayName: String?
        public var network: String?
        public var type: String?

        public init(displayName: String? = nil, network: String? = nil, type: String? = nil) {
            self.displayName = displayName
            self.network = network
            self.type = type
        }

        /// `network` as Apple names networks ("Visa", "MasterCard", "CartesBancaires"): 1–32 ASCII
        /// letters and digits, else nil. The field comes from the shopper's browser or the shop's
        /// app, unsigned, and goes into the payment's record and its webhooks.
        public var checkedNetwork: String? {
            guard let network, (1...32).contains(network.utf8.count),
                network.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) })
            else { return nil }
            return network
        }

        /// The last four digits of `displayName` ("Visa 0492"), what a shop shows of a token it
        /// does not decrypt; "" when the name ends otherwise.
        public var lastFour: String {
            guard let last = displayName?.split(separator: " ").last, last.utf8.count == 4,
                last.utf8.allSatisfy({ (0x30...0x39).contains($0) })
            else { return "" }
            return String(last)
        }
    }

    /// Parses a whole token or a bare `paymentData` object.
    public static func parse(_ json: [UInt8]) throws(ApplePayError) -> PaymentToken {
        let decoder = JSONDecoder()
        if let token = try? decoder.decode(PaymentToken.self, from: Data(json)) {
            return token
        }
        do {
            return PaymentToken(paymentData: try decoder.decode(PaymentData.self, from: Data(json)))
        } catch {
            throw ApplePayError(
                .malformedToken, "the token is not Apple Pay token JSON (paymentData with version, data, signature, header)")
        }
    }

    public init(paymentData: PaymentData, paymentMethod: PaymentMethod? = nil, transactionIdentifier: String? = nil) {
        self.paymentData = paymentData
        self.paymentMethod = paymentMethod
        self.transactionIdentifier = transactionIdentifier
    }
}

/// `paymentData`: the encrypted payment and Apple's signature over it.
public struct PaymentData: Sendable, Codable, Equatable {
    public var version: String
    public var data: String
    public var signature: String
    public var header: Header

    public struct Header: Sendable, Codable, Equatable {
        /// EC_v1: the ephemeral public key (base64 SubjectPublicKeyInfo).
        public var ephemeralPublicKey: String?
        /// RSA_v1: the wrapped symmetric key (base64).
        public var wrappedKey: String?
        /// base64 SHA-256 of the processing certificate's SubjectPublicKeyInfo.
        public var publicKeyHash: String
        /// Hex.
        public var transactionId: String
        /// Hex SHA-256 of the request's applicationData, when the request had one.
        public var applicationData: String?

        public init(
            ephemeralPublicKey: String? = nil, wrappedKey: String? = nil, publicKeyHash: String, transactionId: String,
            applicationData: String? = nil
        ) {
            self.ephemeralPublicKey = ephemeralPublicKey
            self.wrappedKey = wrappedKey
            self.publicKeyHash = publicKeyHash
            self.transactionId = transactionId
            self.applicationData = applicationData
        }
    }

    public init(version: String, data: String, signature: String, header: Header) {
        self.version = version
        self.data = data
        self.signature = signature
        self.header = header
    }

    /// The token's scheme.
    public enum Scheme: String, Sendable {
        case ecV1 = "EC_v1"
        case rsaV1 = "RSA_v1"
    }

    /// The decoded binary fields, checked once.
    public struct Decoded: Sendable {
        public var scheme: Scheme
        public var data: [UInt8]
        public var signature: [UInt8]
        /// The ephemeral public key (EC_v1) or the wrapped key (RSA_v1).
        public var keyMaterial: [UInt8]
        public var publicKeyHash: [UInt8]
        /// Empty for a token event's encrypted metadata, which has none.
        public var transactionId: [UInt8]
        public var applicationData: [UInt8]?

        /// What Apple signs: key material ‖ data ‖ transactionId ‖ applicationData (token
        /// metadata: key material ‖ data).
        public var signedContent: [UInt8] {
            keyMaterial + data + transactionId + (applicationData ?? [])
        }

        /// SHA-256 of ``signedContent``, hashed part by part rather than copied into one buffer.
        func signedContentDigest() -> SHA256.Digest {
            var hasher = SHA256()
            hasher.update(data: keyMaterial)
            hasher.update(data: data)
            hasher.update(data: transactionId)
            if let applicationData { hasher.update(data: applicationData) }
            return hasher.finalize()
        }
    }

    /// A required base64 field's bytes; the refusal names the field.
    static func base64(_ value: String?, _ name: String) throws(ApplePayError) -> [UInt8] {
        guard let value, let bytes = Data(base64Encoded: value), !bytes.isEmpty else {
            throw ApplePayError(.malformedToken, "\(name) is missing or not base64")
        }
        return Array(bytes)
    }

    /// Decodes base64 and hex fields; every failure names the field.
    public func decoded() throws(ApplePayError) -> Decoded {
        guard let scheme = Scheme(rawValue: version) else {
            throw ApplePayError(.unsupportedTokenVersion, "token version \(version.prefix(16)) is not supported (EC_v1 or RSA_v1)")
        }
        let keyMaterial: [UInt8]
        switch scheme {
        case .ecV1: keyMaterial = try Self.base64(header.ephemeralPublicKey, "header.ephemeralPublicKey")
        case .rsaV1: keyMaterial = try Self.base64(header.wrappedKey, "header.wrappedKey")
        }
        guard let transactionId = Hex.decode(header.transactionId), !transactionId.isEmpty else {
            throw ApplePayError(.malformedToken, "header.transactionId is not hex")
        }
        var applicationData: [UInt8]?
        if let hex = header.applicationData {
            guard let bytes = Hex.decode(hex) else { throw ApplePayError(.malformedToken, "header.applicationData is not hex") }
            applicationData = bytes
        }
        let data = try Self.base64(self.data, "data")
        guard data.count > 16 else { throw ApplePayError(.malformedToken, "data is too short to hold a GCM tag") }
        return Decoded(
            scheme: scheme, data: data, signature: try Self.base64(signature, "signature"), keyMaterial: keyMaterial,
            publicKeyHash: try Self.base64(header.publicKeyHash, "header.publicKeyHash"), transactionId: transactionId,
            applicationData: applicationData)
    }
}

/// Hex encoding without Foundation's formatters.
public enum Hex {
    public static func decode(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let high = nibble(utf8[index]), let low = nibble(utf8[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    public static func encode(_ bytes: some Sequence<UInt8>, uppercase: Bool = false) -> String {
        let digits = Array((uppercase ? "0123456789ABCDEF" : "0123456789abcdef").utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: c - 0x30
        case 0x61...0x66: c - 0x61 + 10
        case 0x41...0x46: c - 0x41 + 10
        default: nil
        }
    }
}
