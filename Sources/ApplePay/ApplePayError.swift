/// An error from the Apple Pay core: a stable code and a message a user can act on.
public struct ApplePayError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong, stable across releases (used in logs, JSON errors and tests).
    public enum Code: String, Sendable, Equatable {
        case invalidValidationURL
        case invalidSessionRequest
        case invalidCertificate
        case invalidPrivateKey
        case keyMismatch
        case certificateExpired
        case certificateNotYetValid
        /// The token is not the JSON Apple sends, or a field is not valid base64/hex.
        case malformedToken
        /// The token's `version` is neither EC_v1 nor RSA_v1.
        case unsupportedTokenVersion
        /// The `signature` is not a CMS SignedData structure Orchard can read.
        case malformedSignature
        /// The signature carries no leaf (6.29) or no intermediate (6.2.14) certificate.
        case missingSigningCertificate
        /// The certificates do not chain to the trusted Apple root.
        case untrustedCertificateChain
        /// A certificate of the chain is outside its validity period at the verification time.
        case signingCertificateExpired
        /// The CMS signer is not the leaf certificate.
        case signerMismatch
        /// The messageDigest attribute does not match the token's header and data.
        case messageDigestMismatch
        /// The CMS signature over the signed attributes does not verify.
        case invalidSignature
        /// The signing time is older than the allowed age.
        case signingTimeTooOld
        /// The signing time is later than the allowed clock skew.
        case signingTimeInFuture
        /// No configured processing key matches the token's publicKeyHash.
        case unknownProcessingKey
        /// The token's processing key is held by the processor: Orchard cannot decrypt it.
        case keyHeldByProcessor
        /// A token from the iOS Simulator: no Apple signature, no payment behind it.
        case simulatorToken
        /// The processing key does not fit the token (wrong kind, bad ephemeral key or wrapped key).
        case keyAgreementFailed
        /// AES-GCM authentication failed: wrong key, wrong merchant ID or tampered data.
        case decryptionFailed
        /// The decrypted payload is not the JSON Apple documents.
        case invalidPlaintext
        /// The cart is empty, too large, or names a quantity out of range.
        case invalidCart
        /// A cart line names a product the catalogue does not have.
        case unknownProduct
        /// The shipping method is not offered (for that country).
        case unknownShippingMethod
        /// The shipping address is in a country the shop does not serve.
        case addressUnserviceable
        /// The coupon code does not exist.
        case couponInvalid
        /// The coupon code has expired.
        case couponExpired
        /// The catalogue itself is inconsistent.
        case invalidCatalogue
        /// A Web Merchant Registration request Apple would refuse.
        case invalidRegistration
        /// A recurring, deferred or automatic-reload description the sheet or a processor would refuse.
        case invalidAgreement
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
