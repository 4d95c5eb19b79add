import ApplePay
import Foundation
import Logging

/// Card updates in token events (issue 48): an `UPDATED_*` event's encrypted metadata, opened
/// with the merchant's processing keys, gives the MPAN's new expiry and last digits.
extension MandateLifecycle {
    /// What an update event's encrypted metadata came to.
    enum OpenedMetadata {
        /// Apply the event: with the metadata when it carried some that verified and opened.
        case usable(TokenMetadata?)
        /// It carried metadata that did not verify or open: the event changes nothing.
        case refused
    }

    /// The rule for an `UPDATED_*` event's `encryptedTokenMetadata`.
    ///
    /// It must verify and open exactly as a payment token does: Apple's chain (leaf,
    /// intermediate, root and their OIDs), the one signer's signature over key material ‖ data,
    /// a signing time within ``TokenVerifier/Policy/tokenMetadata`` of now, then decryption with
    /// the merchant's processing key it names, which Orchard must hold, and a plaintext that reads
    /// as Apple's TokenMetadata. Then the event's card art and card details are recorded with the
    /// MPAN's new expiry, last four digits and (when sent) new identifier, in one compare-and-set
    /// with `mandate.updated`, and the processor is told the new expiry where its API takes it.
    ///
    /// When it does not, the whole event changes nothing, card art and details included, and no
    /// `mandate.updated` is sent: Apple made the event as one, and an event whose signed part fails
    /// (a key Orchard was not given, a chain or gateway that is not Apple's) is not one to half
    /// apply, leaving an expiry from before beside card art from after. One warning per event names
    /// the reason, never the MPAN nor key material; the event still counts as applied, since
    /// fetching it again would fail the same way.
    func openedMetadata(_ event: MerchantTokenEvent, merchant: MerchantConfiguration, metadata: Logger.Metadata) -> OpenedMetadata {
        guard let encrypted = event.encryptedTokenMetadata else { return .usable(nil) }
        do throws(ApplePayError) {
            return .usable(
                try encrypted.open(verifier: metadataVerifier, decryptor: TokenDecryptor(keys: merchant.processingKeys), at: time.now))
        } catch {
            logger.warning(
                "Apple's token event carries card metadata that does not verify or open: the event changed nothing",
                metadata: metadata.merging(["reason": "\(error.code.rawValue)", "detail": "\(error.message)"]) { $1 })
            return .refused
        }
    }

    /// Records an update event on one active mandate, then tells its processor a new expiry.
    /// Metadata signed before what the mandate has (events fetched out of order) leaves its MPAN
    /// details as they are.
    func update(_ mandate: MandateRecord, from event: MerchantTokenEvent, opened: TokenMetadata?, metadata: Logger.Metadata)
        async throws
    {
        let now = time.now
        var details = mandate.merchantToken
        if let opened {
            if let recorded = mandate.merchantToken, recorded.signedAt > opened.signingTime {
                logger.notice("the token event's card metadata is older than the mandate's: its expiry is kept", metadata: metadata)
            } else {
                details = MerchantTokenDetails(opened, previous: mandate.merchantToken, at: now)
            }
        }
        guard
            let updated = try await store.updateMandate(
                id: mandate.id, metadata: event.merchantTokenMetadata ?? mandate.merchantTokenMetadata, merchantToken: details, at: now)
        else { return }
        logger.info("mandate updated from Apple's token event", metadata: metadata)
        guard let details, details != mandate.merchantToken else { return }
        await sendExpiry(details, of: updated, metadata: metadata)
    }

    /// Hands the new expiry to the processor that stored the credential, where its API takes one.
    /// A failure is logged: the mandate keeps what Apple said all the same.
    private func sendExpiry(_ details: MerchantTokenDetails, of mandate: MandateRecord, metadata: Logger.Metadata) async {
        let processor = processors.processor(forMerchant: mandate.merchantIdentifier)
        guard processor.name == mandate.processor else {
            logger.warning(
                "the card's new expiry was not sent: the mandate's merchant no longer uses \(mandate.processor); update it there",
                metadata: metadata)
            return
        }
        do {
            if try await processor.updateCredentialExpiry(mandate, month: details.expirationMonth, year: details.expirationYear) {
                logger.info(
                    "the processor has the card's new expiry", metadata: metadata.merging(["processor": "\(processor.name)"]) { $1 })
            }
        } catch {
            logger.warning(
                "the processor did not take the card's new expiry; the mandate keeps it all the same",
                metadata: metadata.merging(["processor": "\(processor.name)", "error": "\(error)"]) { $1 })
        }
    }
}
