import ApplePay
import Foundation
import OrchardCore
import OrchardServices
import WalletOrders
import X509

extension Doctor {
    /// `walletOrders`, loaded as the server loads it, then proven by signing a sample package.
    func walletOrdersCheck(_ file: ConfigurationFile.WalletOrders, merchant: ConfigurationFile.Merchant, values: ConfigurationValues)
        -> DoctorCheck
    {
        do {
            let label = merchant.merchantIdentifier
            guard
                let settings = try ServerConfiguration.resolveWalletOrders(
                    file, merchantDisplayName: merchant.displayName, label: label, values: values, time: time)
            else { return DoctorCheck(subject: label, check: "wallet orders", passed: false, detail: "not configured") }
            return walletOrdersCheck(settings, merchantIdentifier: label)
        } catch {
            return DoctorCheck(subject: merchant.merchantIdentifier, check: "wallet orders", passed: false, detail: error.message)
        }
    }

    /// A loaded merchant's Wallet orders: the certificate's days left, and a sample package signed with its key.
    func walletOrdersCheck(_ settings: WalletOrdersSettings, merchantIdentifier: String) -> DoctorCheck {
        let certificate = settings.identity.certificate
        let days = Int(certificate.notValidAfter.timeIntervalSince(time.now) / 86_400)
        let sample = WalletOrder(
            orderTypeIdentifier: settings.orderTypeIdentifier, orderIdentifier: "doctor", orderNumber: nil,
            orderManagementURL: settings.orderManagementURL.replacingOccurrences(of: "{orderNumber}", with: "doctor"),
            webServiceURL: nil, authenticationToken: nil, createdAt: time.now, updatedAt: time.now, status: .open,
            merchant: .init(
                merchantIdentifier: merchantIdentifier, displayName: settings.merchantDisplayName, url: settings.merchantURL, logo: nil),
            payment: nil, lineItems: nil, fulfillments: nil)
        do {
            _ = try WalletOrderPackage.build(sample, images: [], signer: settings.identity, signingTime: time.now)
        } catch {
            return DoctorCheck(subject: merchantIdentifier, check: "wallet orders", passed: false, detail: error.message)
        }
        let host = URLComponents(string: settings.apns.baseURL)?.host ?? settings.apns.baseURL
        return DoctorCheck(
            subject: merchantIdentifier, check: "wallet orders", passed: true,
            detail:
                "Order Type ID \(settings.orderTypeIdentifier), \(days) days left\(days < 30 ? " (renew it soon)" : ""); a sample package signs; pushes go to \(host); Wallet calls \(settings.webServiceURL)/v1/"
        )
    }
}
