import Foundation

/// `usageInformation.json`, the file of a merchant token usage information package (Apple Pay
/// Merchant Token Usage Information API): what Wallet shows the shopper of a merchant token's
/// past and upcoming payments. Field names are Apple's.
public struct UsageInformation: Sendable, Codable, Equatable {
    /// The only version Apple documents.
    public static let currentSchemaVersion = 1
    /// The furthest `expirationDate` may be from `modificationDate`.
    public static let maximumValidity: TimeInterval = 365 * 86_400

    public var schemaVersion: Int
    public var merchantName: String
    public var merchantTokenIdentifier: String
    /// ISO 8601 date and time.
    public var modificationDate: String
    /// ISO 8601 date and time, at most a year ahead: after it, Wallet treats the information as stale.
    public var expirationDate: String?
    public var otherUsageDescription: String?
    /// The package's image of the merchant's logo (`<name>@2x.png`), when it has one.
    public var merchantLogoName: String?
    public var pastPayments: [PastPayment]?
    /// Shown in this order.
    public var upcomingPayments: [UpcomingPayment]?

    public init(
        merchantName: String, merchantTokenIdentifier: String, modificationDate: String, expirationDate: String?,
        pastPayments: [PastPayment]?, upcomingPayments: [UpcomingPayment]?
    ) {
        self.schemaVersion = Self.currentSchemaVersion
        self.merchantName = merchantName
        self.merchantTokenIdentifier = merchantTokenIdentifier
        self.modificationDate = modificationDate
        self.expirationDate = expirationDate
        self.pastPayments = pastPayments
        self.upcomingPayments = upcomingPayments
    }

    /// `CurrencyAmount`: a decimal string in major units ("9.90") and its ISO 4217 code.
    public struct Amount: Sendable, Codable, Equatable {
        public var amount: String
        public var currency: String

        public init(_ money: Money) {
            amount = money.decimalString
            currency = money.currency.code
        }
    }

    /// `PastPayment.LineItems` (and `SummaryItems`): a label and its amount.
    public struct Item: Sendable, Codable, Equatable {
        public var label: String
        public var amount: Amount

        public init(label: String, amount: Amount) {
            self.label = label
            self.amount = amount
        }
    }

    public struct PastPayment: Sendable, Codable, Equatable {
        /// Opaque, never shown.
        public var identifier: String
        /// ISO 8601.
        public var paymentDate: String
        public var totalAmount: Amount
        public var lineItems: [Item]?

        public init(identifier: String, paymentDate: String, totalAmount: Amount, lineItems: [Item]?) {
            self.identifier = identifier
            self.paymentDate = paymentDate
            self.totalAmount = totalAmount
            self.lineItems = lineItems
        }
    }

    public struct UpcomingPayment: Sendable, Codable, Equatable {
        public var identifier: String
        public var label: String
        /// `recurring`, `deferred` or `automaticReload`, with the matching details.
        public var paymentType: String
        public var recurringPaymentDetails: RecurringDetails?
        public var deferredPaymentDetails: DeferredDetails?
        public var automaticReloadPaymentDetails: ReloadDetails?

        public init(
            identifier: String, label: String, paymentType: String, recurringPaymentDetails: RecurringDetails? = nil,
            deferredPaymentDetails: DeferredDetails? = nil, automaticReloadPaymentDetails: ReloadDetails? = nil
        ) {
            self.identifier = identifier
            self.label = label
            self.paymentType = paymentType
            self.recurringPaymentDetails = recurringPaymentDetails
            self.deferredPaymentDetails = deferredPaymentDetails
            self.automaticReloadPaymentDetails = automaticReloadPaymentDetails
        }
    }

    public struct RecurringDetails: Sendable, Codable, Equatable {
        public struct Interval: Sendable, Codable, Equatable {
            public var unit: String
            public var count: Int

            public init(unit: String, count: Int) {
                self.unit = unit
                self.count = count
            }
        }

        public struct Scheduled: Sendable, Codable, Equatable {
            /// ISO 8601 date (`2027-02-01`): Apple ignores the time.
            public var paymentDate: String
            public var amount: Amount?

            public init(paymentDate: String, amount: Amount?) {
                self.paymentDate = paymentDate
                self.amount = amount
            }
        }

        public var interval: Interval
        /// Apple documents the field but not its values; Orchard writes `subscription`.
        public var recurringPaymentType: String
        public var scheduledPayments: [Scheduled]?
        public var endsAfterLastPayment: Bool?

        public init(interval: Interval, recurringPaymentType: String, scheduledPayments: [Scheduled]?, endsAfterLastPayment: Bool?) {
            self.interval = interval
            self.recurringPaymentType = recurringPaymentType
            self.scheduledPayments = scheduledPayments
            self.endsAfterLastPayment = endsAfterLastPayment
        }
    }

    public struct DeferredDetails: Sendable, Codable, Equatable {
        public var amount: Amount?
        /// ISO 8601 date.
        public var paymentDate: String?

        public init(amount: Amount?, paymentDate: String?) {
            self.amount = amount
            self.paymentDate = paymentDate
        }
    }

    public struct ReloadDetails: Sendable, Codable, Equatable {
        public var amount: Amount?
        public var thresholdAmount: Amount?

        public init(amount: Amount?, thresholdAmount: Amount?) {
            self.amount = amount
            self.thresholdAmount = thresholdAmount
        }
    }
}
