/// Why a Wallet order identity or package cannot be made, with a message to act on.
public struct WalletOrderError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// The certificate is not an Order Type ID certificate for the identifier.
        case notAnOrderTypeCertificate
        case keyMismatch
        case certificateNotYetValid
        case certificateExpired
        /// The intermediate is missing, not a CA, or did not issue the certificate.
        case intermediate
        /// The order breaks a rule of Apple's schema.
        case invalidOrder
        case signing
    }

    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}
