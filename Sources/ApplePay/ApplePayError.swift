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
    }

    public var code: Code
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
