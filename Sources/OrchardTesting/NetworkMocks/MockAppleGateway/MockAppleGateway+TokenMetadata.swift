import ApplePay
import Foundation
import Synchronization
import X509

/// What the mock gateway mints token events' encrypted metadata with, as Apple would: the test
/// token chain and the public halves of the merchant's processing keys.
public struct MockTokenMetadataMinting: Sendable {
    public var minter: TokenMinter
    public var merchantIdentifier: String
    /// The processing keys Apple encrypts to: an EC P-256 one (EC_v1) and an RSA one (RSA_v1).
    public var ecKey: Certificate.PublicKey?
    public var rsaKey: Certificate.PublicKey?

    public init(minter: TokenMinter, merchantIdentifier: String, ecKey: Certificate.PublicKey?, rsaKey: Certificate.PublicKey? = nil) {
        self.minter = minter
        self.merchantIdentifier = merchantIdentifier
        self.ecKey = ecKey
        self.rsaKey = rsaKey
    }
}

/// Apple's `TokenMetadata` as a test writes it: the MPAN's expiry (`YYMMDD`), the MPAN and,
/// when it changed, the new MPAN's identifier. Not checked: a test may send what Apple would not.
public struct MockTokenMetadata: Sendable, Codable, Equatable {
    public var expirationDate: String
    public var mpan: String
    public var mpanId: String?

    public init(expirationDate: String, mpan: String, mpanId: String? = nil) {
        self.expirationDate = expirationDate
        self.mpan = mpan
        self.mpanId = mpanId
    }
}

/// Why the mock could not mint metadata.
public struct MockTokenMetadataFailure: Error, CustomStringConvertible {
    public var description: String
}

extension MockAppleGateway {
    /// How ``mintTokenMetadata(_:scheme:tamper:signingTime:)`` and `POST /_mock/token-events`
    /// mint; nil (the default): they refuse. `orchard-sandbox demo` sets the demo merchant's.
    public var tokenMetadataMinting: MockTokenMetadataMinting? {
        get { merchantTokens.state.withLock { $0.minting } }
        set { merchantTokens.state.withLock { $0.minting = newValue } }
    }

    /// `encryptedTokenMetadata` for `values`, encrypted to the merchant's EC key (EC_v1) or RSA
    /// key (RSA_v1) and signed with the test chain over key material ‖ data. With `tamper`, a byte
    /// of its data is flipped after signing: it does not verify.
    public func mintTokenMetadata(
        _ values: MockTokenMetadata, scheme: PaymentData.Scheme = .ecV1, tamper: Bool = false, signingTime: Date = Date()
    ) throws -> EncryptedTokenMetadata {
        guard let minting = tokenMetadataMinting else {
            throw MockTokenMetadataFailure(description: "the mock gateway has no processing key to encrypt token metadata to")
        }
        guard let key = scheme == .ecV1 ? minting.ecKey : minting.rsaKey else {
            throw MockTokenMetadataFailure(
                description: "the mock gateway has no \(scheme == .ecV1 ? "EC" : "RSA") processing key for \(scheme.rawValue)")
        }
        var metadata = try minting.minter.mintTokenMetadata(
            payload: TokenMinter.tokenMetadataPayload(expirationDate: values.expirationDate, mpan: values.mpan, mpanId: values.mpanId),
            to: key, merchantIdentifier: minting.merchantIdentifier, signingTime: signingTime)
        if tamper, let data = metadata.data, var bytes = Data(base64Encoded: data).map(Array.init), !bytes.isEmpty {
            bytes[0] ^= 0x01
            metadata.data = Data(bytes).base64EncodedString()
        }
        return metadata
    }
}
