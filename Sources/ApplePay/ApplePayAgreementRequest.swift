import Foundation

/// Apple Pay JS's `ApplePayRecurringPaymentRequest`.
public struct ApplePayRecurringPaymentRequest: Sendable, Codable, Equatable {
    public var paymentDescription: String
    public var regularBilling: ApplePayLineItem
    public var trialBilling: ApplePayLineItem?
    public var billingAgreement: String?
    public var managementURL: String
    public var tokenNotificationURL: String?
}

/// Apple Pay JS's `ApplePayDeferredPaymentRequest`.
public struct ApplePayDeferredPaymentRequest: Sendable, Codable, Equatable {
    public var paymentDescription: String
    public var deferredBilling: ApplePayLineItem
    public var billingAgreement: String?
    public var managementURL: String
    public var tokenNotificationURL: String?
    public var freeCancellationDate: String?
    public var freeCancellationDateTimeZone: String?
}

/// Apple Pay JS's `ApplePayAutomaticReloadPaymentRequest`.
public struct ApplePayAutomaticReloadPaymentRequest: Sendable, Codable, Equatable {
    public var paymentDescription: String
    public var automaticReloadBilling: ApplePayLineItem
    public var billingAgreement: String?
    public var managementURL: String
    public var tokenNotificationURL: String?
}

extension ApplePayPaymentRequest {
    /// Puts a checked agreement on the request, in the one field Apple Pay JS reads for its kind;
    /// `tokenNotificationURL` is where Apple will tell Orchard of changes to the merchant token.
    public mutating func setAgreement(_ agreement: PaymentAgreement, tokenNotificationURL: String?) {
        guard let currency = Currency(code: currencyCode) else { return }
        func item(_ billing: PaymentAgreement.Billing?, _ timing: String) -> ApplePayLineItem? {
            billing.map { billing in
                ApplePayLineItem(
                    label: billing.label, amount: Money(minorUnits: billing.amount, currency: currency).decimalString, type: "final",
                    paymentTiming: timing, recurringPaymentStartDate: billing.startDate,
                    recurringPaymentIntervalUnit: timing == "recurring" ? (billing.intervalUnit ?? .month).rawValue : nil,
                    recurringPaymentIntervalCount: timing == "recurring" ? billing.intervalCount ?? 1 : nil,
                    recurringPaymentEndDate: billing.endDate, deferredPaymentDate: billing.paymentDate,
                    automaticReloadPaymentThresholdAmount: billing.thresholdAmount.map {
                        Money(minorUnits: $0, currency: currency).decimalString
                    })
            }
        }
        recurringPaymentRequest = nil
        deferredPaymentRequest = nil
        automaticReloadPaymentRequest = nil
        switch agreement.type {
        case .recurring:
            guard let regular = item(agreement.regularBilling, "recurring") else { return }
            recurringPaymentRequest = ApplePayRecurringPaymentRequest(
                paymentDescription: agreement.paymentDescription, regularBilling: regular,
                trialBilling: item(agreement.trialBilling, "recurring"), billingAgreement: agreement.billingAgreement,
                managementURL: agreement.managementURL, tokenNotificationURL: tokenNotificationURL)
        case .deferred:
            guard let deferred = item(agreement.deferredBilling, "deferred") else { return }
            deferredPaymentRequest = ApplePayDeferredPaymentRequest(
                paymentDescription: agreement.paymentDescription, deferredBilling: deferred, billingAgreement: agreement.billingAgreement,
                managementURL: agreement.managementURL, tokenNotificationURL: tokenNotificationURL,
                freeCancellationDate: agreement.freeCancellationDate, freeCancellationDateTimeZone: agreement.freeCancellationDateTimeZone)
        case .automaticReload:
            guard let reload = item(agreement.automaticReloadBilling, "automaticReload") else { return }
            automaticReloadPaymentRequest = ApplePayAutomaticReloadPaymentRequest(
                paymentDescription: agreement.paymentDescription, automaticReloadBilling: reload,
                billingAgreement: agreement.billingAgreement, managementURL: agreement.managementURL,
                tokenNotificationURL: tokenNotificationURL)
        }
    }
}
