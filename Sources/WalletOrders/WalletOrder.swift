import Foundation

/// `order.json`: an order as Wallet shows it, in Apple's schema (developer.apple.com/documentation/walletorders/order).
///
/// Only what Orchard fills in is modelled; every key keeps Apple's name, and optional keys are
/// left out of the JSON when nil. docs/wallet-orders.md lists each field with its source.
public struct WalletOrder: Codable, Sendable, Equatable {
    /// The order's state as Wallet groups it: `completed` and `cancelled` orders are closed.
    public enum Status: String, Codable, Sendable, CaseIterable {
        case open, completed, cancelled
    }

    /// "The current version is 1."
    public var schemaVersion: Int = 1
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    /// Apple allows only `ecommerce`.
    public var orderType: String = "ecommerce"
    public var orderNumber: String?
    public var orderManagementURL: String
    /// Where Wallet fetches updates; must be `https://`. Present only with ``authenticationToken``.
    public var webServiceURL: String?
    /// At least 16 characters; required when there is a web service.
    public var authenticationToken: String?
    public var createdAt: Date
    /// Must only ever increase, and equal `createdAt` until the first change.
    public var updatedAt: Date
    public var status: Status
    public var statusDescription: String?
    public var merchant: Merchant
    public var payment: Payment?
    public var lineItems: [LineItem]?
    public var fulfillments: [Fulfillment]?

    public init(
        orderTypeIdentifier: String, orderIdentifier: String, orderNumber: String?, orderManagementURL: String,
        webServiceURL: String?, authenticationToken: String?, createdAt: Date, updatedAt: Date, status: Status,
        merchant: Merchant, payment: Payment?, lineItems: [LineItem]?, fulfillments: [Fulfillment]?
    ) {
        self.orderTypeIdentifier = orderTypeIdentifier
        self.orderIdentifier = orderIdentifier
        self.orderNumber = orderNumber
        self.orderManagementURL = orderManagementURL
        self.webServiceURL = webServiceURL
        self.authenticationToken = authenticationToken
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.status = status
        self.merchant = merchant
        self.payment = payment
        self.lineItems = lineItems
        self.fulfillments = fulfillments
    }

    /// `Merchant`: who sold it. `merchantIdentifier` is the Apple Pay merchant ID.
    public struct Merchant: Codable, Sendable, Equatable {
        public var merchantIdentifier: String
        public var displayName: String
        public var url: String
        /// The name of the logo image in the package.
        public var logo: String?
        public init(merchantIdentifier: String, displayName: String, url: String, logo: String?) {
            self.merchantIdentifier = merchantIdentifier
            self.displayName = displayName
            self.url = url
            self.logo = logo
        }
    }

    /// `CurrencyAmount`: the amount as a decimal string (Apple's schema types it `string`) and its ISO 4217 code.
    public struct CurrencyAmount: Codable, Sendable, Equatable {
        public var amount: String
        public var currency: String
        public init(amount: String, currency: String) {
            self.amount = amount
            self.currency = currency
        }
    }

    /// `Payment`: the total, its summary and what was charged and refunded.
    public struct Payment: Codable, Sendable, Equatable {
        public enum Status: String, Codable, Sendable, CaseIterable {
            case pending, authorized, paid, refunded, declined, voided
        }
        public struct SummaryItem: Codable, Sendable, Equatable {
            public var label: String
            public var value: CurrencyAmount
            public init(label: String, value: CurrencyAmount) {
                self.label = label
                self.value = value
            }
        }
        public var total: CurrencyAmount
        public var status: Status
        public var summaryItems: [SummaryItem]?
        /// Shown as the card, e.g. "Visa 1234".
        public var paymentMethods: [String]?
        public var transactions: [Transaction]?
        public init(
            total: CurrencyAmount, status: Status, summaryItems: [SummaryItem]?, paymentMethods: [String]?, transactions: [Transaction]?
        ) {
            self.total = total
            self.status = status
            self.summaryItems = summaryItems
            self.paymentMethods = paymentMethods
            self.transactions = transactions
        }
    }

    /// `PaymentTransaction`: one charge or refund.
    public struct Transaction: Codable, Sendable, Equatable {
        public enum Status: String, Codable, Sendable, CaseIterable {
            case pending, approved, completed, cancelled, failed
        }
        public enum Kind: String, Codable, Sendable, CaseIterable {
            case purchase, refund
        }
        public struct PaymentMethod: Codable, Sendable, Equatable {
            public var displayName: String
            public init(displayName: String) { self.displayName = displayName }
        }
        public var amount: CurrencyAmount
        public var createdAt: Date
        public var paymentMethod: PaymentMethod
        public var status: Status
        public var transactionType: Kind
        public init(amount: CurrencyAmount, createdAt: Date, paymentMethod: PaymentMethod, status: Status, transactionType: Kind) {
            self.amount = amount
            self.createdAt = createdAt
            self.paymentMethod = paymentMethod
            self.status = status
            self.transactionType = transactionType
        }
    }

    /// `LineItem`: one line of the order.
    public struct LineItem: Codable, Sendable, Equatable {
        public var title: String
        public var subtitle: String?
        public var quantity: Int
        /// The line's price, as Apple's examples give it: the unit price.
        public var price: CurrencyAmount?
        public var sku: String?
        public init(title: String, subtitle: String? = nil, quantity: Int, price: CurrencyAmount?, sku: String?) {
            self.title = title
            self.subtitle = subtitle
            self.quantity = quantity
            self.price = price
            self.sku = sku
        }
    }
}
