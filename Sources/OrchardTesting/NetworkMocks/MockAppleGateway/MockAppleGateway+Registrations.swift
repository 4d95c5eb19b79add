import Foundation
import Synchronization

/// What the mock gateway's Web Merchant Registration API holds, for tests to read and change.
extension MockAppleGateway {
    /// Merchants registered through the Web Merchant Registration API, by partner identifier.
    public var partnerMerchants: [String: MockPartnerMerchant] {
        state.withLock { $0.partners }
    }

    /// Forgets `domain` of a registered merchant, as when Apple's record drifts from a platform's
    /// registry; false when the merchant or domain was not registered.
    @discardableResult
    public func dropRegisteredDomain(_ domain: String, partner: String) -> Bool {
        state.withLock { state in
            guard let index = state.partners[partner]?.domainNames.firstIndex(of: domain) else { return false }
            state.partners[partner]?.domainNames.remove(at: index)
            return true
        }
    }

    /// Every registration API call received, oldest first.
    public var receivedRegistrationCalls: [ReceivedRegistrationCall] {
        state.withLock { $0.registrationCalls }
    }
}
