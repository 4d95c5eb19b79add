import ApplePay
import Foundation

/// One mandate on a merchant token, with what the usage information is made of: the agreement
/// the shopper accepted, the order of its first payment, and its payments.
public struct MandateUsage: Sendable {
    public var mandate: MandateRecord
    /// The agreement and lines of the order that set the mandate up; nil when that order is gone.
    public var firstOrder: PricedOrder?
    /// The mandate's payments (first one and charges), newest first.
    public var payments: [PaymentRecord]

    public init(mandate: MandateRecord, firstOrder: PricedOrder?, payments: [PaymentRecord]) {
        self.mandate = mandate
        self.firstOrder = firstOrder
        self.payments = payments
    }
}

/// Makes a token's `usageInformation.json` from its mandates, at a given time: past payments
/// that took money (newest first), and what comes next by each active mandate's agreement, in the
/// mandate's currency.
public struct UsageInformationBuilder: Sendable {
    public let settings: MerchantTokenUsageSettings
    public let now: Date

    public init(settings: MerchantTokenUsageSettings, now: Date) {
        self.settings = settings
        self.now = now
    }

    /// The most line items a past payment lists.
    static let maximumLineItems = 5

    /// The document, listing at most `pastLimit` past payments (newest first).
    public func document(merchantTokenIdentifier: String, mandates: [MandateUsage], pastLimit: Int) -> UsageInformation {
        // Newest first; payments made in the same second keep the store's order (newest first too).
        let past = mandates.flatMap { usage in usage.payments.filter(Self.tookMoney).compactMap { pastPayment($0, of: usage) } }
            .enumerated().sorted { ($0.element.date, $1.offset) > ($1.element.date, $0.offset) }
            .prefix(max(0, pastLimit)).map(\.element.payment)
        let upcoming = mandates.filter { $0.mandate.state == .active }.compactMap(upcomingPayment)
        let validity = min(settings.validity, UsageInformation.maximumValidity)
        return UsageInformation(
            merchantName: settings.merchantName, merchantTokenIdentifier: merchantTokenIdentifier,
            modificationDate: Self.instant(now), expirationDate: Self.instant(now.addingTimeInterval(validity)),
            pastPayments: Array(past), upcomingPayments: upcoming)
    }

    /// Whether a payment charged the shopper (held or taken), as Wallet lists past payments.
    static func tookMoney(_ payment: PaymentRecord) -> Bool {
        [.authorized, .settled].contains(payment.state)
    }

    private func pastPayment(_ payment: PaymentRecord, of usage: MandateUsage) -> (date: Date, payment: UsageInformation.PastPayment)? {
        guard let currency = Currency(code: payment.currency) else { return nil }
        let amount = { (minor: Int64) in UsageInformation.Amount(Money(minorUnits: minor, currency: currency)) }
        var lines: [UsageInformation.Item]
        if payment.id == usage.mandate.paymentId {
            // The first payment: what the shopper bought then, or the agreement it set up.
            let bought = (usage.firstOrder?.lines ?? []).prefix(Self.maximumLineItems)
            lines =
                bought.isEmpty
                ? [UsageInformation.Item(label: usage.mandate.description, amount: amount(payment.amount))]
                : bought.map { UsageInformation.Item(label: $0.label, amount: amount($0.amount)) }
        } else {
            // A merchant-initiated charge: the billing line the shopper agreed to names it.
            let label = usage.firstOrder?.agreement.flatMap(Self.billingLabel) ?? usage.mandate.description
            lines = [UsageInformation.Item(label: label, amount: amount(payment.amount))]
        }
        lines = lines.map { UsageInformation.Item(label: String($0.label.prefix(64)), amount: $0.amount) }
        return (
            payment.createdAt,
            UsageInformation.PastPayment(
                identifier: payment.id, paymentDate: Self.instant(payment.createdAt), totalAmount: amount(payment.amount),
                lineItems: lines)
        )
    }

    static func billingLabel(_ agreement: PaymentAgreement) -> String? {
        (agreement.regularBilling ?? agreement.deferredBilling ?? agreement.automaticReloadBilling)?.label
    }

    private func upcomingPayment(_ usage: MandateUsage) -> UsageInformation.UpcomingPayment? {
        let mandate = usage.mandate
        guard let agreement = usage.firstOrder?.agreement, let currency = Currency(code: mandate.currency) else { return nil }
        let amount = { (minor: Int64) in UsageInformation.Amount(Money(minorUnits: minor, currency: currency)) }
        let label = String((Self.billingLabel(agreement) ?? mandate.description).prefix(64))
        switch agreement.type {
        case .recurring:
            guard let regular = agreement.regularBilling else { return nil }
            let schedule = RecurringSchedule(agreement: agreement, firstPayment: mandate.createdAt)
            let dates = schedule.dates(after: now, limit: settings.scheduledPayments)
            let unit = regular.intervalUnit ?? .month
            return UsageInformation.UpcomingPayment(
                identifier: mandate.id, label: label, paymentType: "recurring",
                recurringPaymentDetails: UsageInformation.RecurringDetails(
                    interval: .init(unit: unit.rawValue, count: regular.intervalCount ?? 1), recurringPaymentType: "subscription",
                    scheduledPayments: dates.map { .init(paymentDate: Self.day($0), amount: amount(regular.amount)) },
                    endsAfterLastPayment: schedule.endsWithin(dates) ? true : nil))
        case .deferred:
            // One later charge: upcoming until it is made.
            let charged = usage.payments.contains { $0.id != mandate.paymentId && Self.tookMoney($0) }
            guard let billing = agreement.deferredBilling, !charged else { return nil }
            let date = billing.paymentDate.flatMap { try? Date($0, strategy: .iso8601) }
            return UsageInformation.UpcomingPayment(
                identifier: mandate.id, label: label, paymentType: "deferred",
                deferredPaymentDetails: .init(amount: amount(billing.amount), paymentDate: date.map(Self.day)))
        case .automaticReload:
            guard let billing = agreement.automaticReloadBilling else { return nil }
            return UsageInformation.UpcomingPayment(
                identifier: mandate.id, label: label, paymentType: "automaticReload",
                automaticReloadPaymentDetails: .init(
                    amount: amount(billing.amount), thresholdAmount: billing.thresholdAmount.map(amount)))
        }
    }

    /// ISO 8601 date and time in UTC, to the second.
    static func instant(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .gmt))
    }

    /// ISO 8601 date (UTC).
    static func day(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(timeZone: TimeZone(identifier: "UTC") ?? .gmt).year().month().day())
    }
}
