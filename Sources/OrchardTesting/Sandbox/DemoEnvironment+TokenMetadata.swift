import ApplePay
import Crypto
import Foundation
import SwiftASN1
import X509
import _CryptoExtras

extension DemoEnvironment {
    /// How the demo's mock gateway mints token events' encrypted metadata for the demo merchant:
    /// the test token chain, and the processing keys `orchard.json` lists (the EC and RSA keys
    /// Orchard holds, or with `processorHoldsKey` the mock processor's key, which Orchard cannot open).
    public func tokenMetadataMinting(processorHoldsKey: Bool = false) throws -> MockTokenMetadataMinting {
        let minter = TokenMinter(chain: try tokenChain())
        if processorHoldsKey {
            let held = try processorHeldKey()
            return MockTokenMetadataMinting(
                minter: minter, merchantIdentifier: Self.merchantIdentifier,
                ecKey: try Certificate.PublicKey(derEncoded: Array(held.key.publicKey.derRepresentation)))
        }
        let keys = try processingKeys()
        return MockTokenMetadataMinting(
            minter: minter, merchantIdentifier: Self.merchantIdentifier,
            ecKey: try Certificate.PublicKey(derEncoded: Array(keys.ec.publicKey.derRepresentation)),
            rsaKey: try Certificate.PublicKey(derEncoded: Array(keys.rsa.publicKey.derRepresentation)))
    }
}
