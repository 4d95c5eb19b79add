import ApplePay
import Foundation
import GooglePay
import OrchardCore
import OrchardServices

extension Doctor {
    /// `googlePay`, loaded as the server loads it, against the merchant's processor as loaded.
    func googlePayCheck(_ file: ConfigurationFile.GooglePay, merchant: ConfigurationFile.Merchant, values: ConfigurationValues) async
        -> DoctorCheck
    {
        let label = merchant.merchantIdentifier
        do {
            let processor = try ServerConfiguration.resolveProcessor(
                merchant.processor, label: label, values: values, drivers: processorDrivers)
            guard
                let settings = try ServerConfiguration.resolveGooglePay(
                    file, merchantDisplayName: merchant.displayName, processor: processor, label: label, values: values)
            else { return DoctorCheck(subject: label, check: "google pay", passed: false, detail: "not configured") }
            return await googlePayCheck(settings, processor: processor, subject: label)
        } catch {
            return DoctorCheck(subject: label, check: "google pay", passed: false, detail: error.message)
        }
    }

    /// A loaded merchant's Google Pay: who its tokens are signed for, which gateway they are
    /// sealed to (checked against the processor when the configuration loaded: a wrong gateway
    /// or gateway merchant ID, Google's OR_BIBED_06 in production, never gets this far), and
    /// how long Google's root signing keys last.
    func googlePayCheck(_ settings: GooglePaySettings, processor: any ProcessorSettings, subject: String) async -> DoctorCheck {
        let now = time.now
        let live = settings.signingKeys.keys.filter { $0.expiration > now }
        guard let last = live.map(\.expiration).max() else {
            return DoctorCheck(
                subject: subject, check: "google pay", passed: false,
                detail: "every root signing key in signingKeys has expired: fetch Google's keys.json again")
        }
        let days = Int(last.timeIntervalSince(now) / 86_400)
        guard days >= 30 else {
            return DoctorCheck(
                subject: subject, check: "google pay", passed: false,
                detail: "the last root signing key expires in \(days) days: fetch Google's keys.json again before tokens stop verifying")
        }
        let mode: String
        switch settings.mode {
        case .gateway(let name, let merchantId):
            if let refusal = await gatewayAnswer(name, processor: processor, subject: subject) { return refusal }
            mode = "gateway mode: tokens sealed for \(name), gatewayMerchantId \(merchantId), sent to the \(processor.type) processor"
        case .direct(let keys):
            mode =
                "direct mode: Orchard decrypts with \(keys.count) key\(keys.count == 1 ? "" : "s") (PCI DSS scope: see docs/google-pay.md)"
        }
        return DoctorCheck(
            subject: subject, check: "google pay", passed: true,
            detail:
                "\(settings.environment.rawValue), \(mode); signatures checked for \(settings.recipientId) under \(live.count) root signing key\(live.count == 1 ? "" : "s") (good for \(days) more days); pay.js from \(settings.scriptURL)"
        )
    }

    /// With `--live`, the processor's own word on its gateway name, where its API gives one: a
    /// refusal line when it differs from (or cannot confirm) the configured name; nil otherwise.
    private func gatewayAnswer(_ name: String, processor: any ProcessorSettings, subject: String) async -> DoctorCheck? {
        guard let answering = liveProcessors?(processor) as? any GooglePayGatewayAnswering else { return nil }
        do {
            let answered = try await answering.googlePayGateway(countryCode: "NL", currencyCode: "EUR")
            guard answered == name else {
                return DoctorCheck(
                    subject: subject, check: "google pay", passed: false,
                    detail:
                        "the \(processor.type) processor names its Google Pay gateway \(answered), not \(name): set googlePay.gateway to \(answered) (Google answers OR_BIBED_06 in production otherwise)"
                )
            }
            return nil
        } catch {
            return DoctorCheck(
                subject: subject, check: "google pay", passed: false,
                detail: "the \(processor.type) processor could not confirm its Google Pay gateway: \(error)")
        }
    }
}
