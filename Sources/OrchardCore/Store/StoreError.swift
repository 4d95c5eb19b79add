import ApplePay
import Foundation

/// Why a store failed: the storage itself (a full disk, a lost connection, a row it cannot
/// read). A business rule's refusal is a ``CoreError``.
public struct StoreError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Code: Sendable, Equatable {
        /// The storage itself failed.
        case storage
        /// The storage could not be reached (no database connection within its bound, the
        /// connection lost, a full disk, an unwritable file): nothing was written, and the same
        /// call may succeed once it is back.
        case unavailable
    }

    public var code: Code
    public var message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
