import ApplePay
import Foundation
import WalletOrders

/// What Wallet shows of a paid order: decided here, from the stored order, payment, refunds and
/// the shop's reference, so every package (and every store) says the same.
public enum WalletOrderContent {
    /// What one package is made from, as read from the store.
    public struct Sources: Sendable {
        public var record: WalletOrderRecord
        public var order: OrderRecord
        public var payment: PaymentRecord
        public var refunds: [RefundRecord]
        /// The shop's payment request, when the order came through `/v1`: its reference is the order number.
        public var request: PaymentRequestRecord?

        public init(
            record: WalletOrderRecord, order: OrderRecord, payment: PaymentRecord, refunds: [RefundRecord], request: PaymentRequestRecord?
        ) {
            self.record = record
            self.order = order
            self.payment = payment
            self.refunds = refunds
            self.request = request
        }
    }

    /// `order.json` for `sources`, carrying `authenticationToken` (the one Wallet just presented).
    public static func order(_ sources: Sources, settings: WalletOrdersSettings, merchantIdentifier: String, authenticationToken: String)
        -> WalletOrder
    {
        let (payment, priced) = (sources.payment, sources.order.priced)
        let amount = { (minor: Int64) in WalletOrder.CurrencyAmount(amount: decimal(minor, payment.currency), currency: payment.currency) }
        let card = [payment.network.map(networkName), payment.lastFour.isEmpty ? nil : payment.lastFour].compactMap { $0 }
            .joined(separator: " ")
        let method = WalletOrder.Transaction.PaymentMethod(displayName: card.isEmpty ? "Apple Pay" : card)
        let refunded = sources.refunds.filter { $0.state == .refunded }.reduce(Int64(0)) { $0 + $1.amount }
        var transactions = [
            WalletOrder.Transaction(
                amount: amount(payment.amount), createdAt: payment.createdAt, paymentMethod: method,
                status: purchaseStatus(payment.state), transactionType: .purchase)
        ]
        for refund in sources.refunds where refund.state != .refused {
            transactions.append(
                WalletOrder.Transaction(
                    amount: amount(refund.amount), createdAt: refund.createdAt, paymentMethod: method,
                    status: refund.state == .refunded ? .completed : .pending, transactionType: .refund))
        }
        let number = orderNumber(sources)
        return WalletOrder(
            orderTypeIdentifier: settings.orderTypeIdentifier, orderIdentifier: sources.record.orderIdentifier, orderNumber: number,
            orderManagementURL: settings.orderManagementURL.replacingOccurrences(
                of: "{orderNumber}", with: number.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? ""),
            webServiceURL: settings.webServiceURL, authenticationToken: authenticationToken, createdAt: sources.record.createdAt,
            updatedAt: sources.record.updatedAt,
            status: status(payment: payment, refunded: refunded, fulfillments: sources.record.fulfillments),
            merchant: .init(
                merchantIdentifier: merchantIdentifier, displayName: settings.merchantDisplayName, url: settings.merchantURL,
                logo: settings.logoPNG == nil ? nil : "logo.png"),
            payment: .init(
                total: amount(priced.total), status: paymentStatus(payment.state, refunded: refunded, of: payment.amount),
                summaryItems: summary(priced, amount: amount), paymentMethods: card.isEmpty ? nil : [card], transactions: transactions),
            lineItems: priced.lines.isEmpty
                ? nil
                : priced.lines.map { .init(title: $0.label, quantity: $0.quantity, price: amount($0.unitPrice), sku: $0.productId) },
            fulfillments: sources.record.fulfillments.isEmpty ? nil : sources.record.fulfillments)
    }

    /// The shop's reference when it gave one, else Orchard's payment ID: what the shopper can quote.
    static func orderNumber(_ sources: Sources) -> String {
        if let reference = sources.request?.reference, !reference.isEmpty { return reference }
        return sources.payment.id
    }

    static func summary(_ priced: PricedOrder, amount: (Int64) -> WalletOrder.CurrencyAmount) -> [WalletOrder.Payment.SummaryItem]? {
        var items: [WalletOrder.Payment.SummaryItem] = []
        if !priced.lines.isEmpty { items.append(.init(label: "Subtotal", value: amount(priced.subtotal))) }
        if let shipping = priced.shippingMethod { items.append(.init(label: shipping.label, value: amount(shipping.amount))) }
        if priced.discount != 0 {
            items.append(.init(label: priced.couponCode.map { "Discount (\($0))" } ?? "Discount", value: amount(-abs(priced.discount))))
        }
        return items.isEmpty ? nil : items
    }

    /// Closed when the payment was voided or wholly refunded, or every live fulfilment has reached the shopper.
    static func status(payment: PaymentRecord, refunded: Int64, fulfillments: [WalletOrder.Fulfillment]) -> WalletOrder.Status {
        if payment.state == .cancelled || (payment.amount > 0 && refunded >= payment.amount) { return .cancelled }
        let live = fulfillments.filter { $0.status != "cancelled" }
        if !live.isEmpty, live.allSatisfy({ ["delivered", "pickedUp"].contains($0.status) }) { return .completed }
        return .open
    }

    static func paymentStatus(_ state: PaymentState, refunded: Int64, of amount: Int64) -> WalletOrder.Payment.Status {
        if refunded > 0 && refunded >= amount { return .refunded }
        switch state {
        case .authorized: return .authorized
        case .settled: return .paid
        case .cancelled: return .voided
        case .refused, .failed: return .declined
        case .pending, .unknown, .superseded: return .pending
        }
    }

    static func purchaseStatus(_ state: PaymentState) -> WalletOrder.Transaction.Status {
        switch state {
        case .authorized: .approved
        case .settled: .completed
        case .cancelled: .cancelled
        case .refused, .failed: .failed
        case .pending, .unknown, .superseded: .pending
        }
    }

    /// A network as Apple Pay names it (`visa`, `masterCard`, `amex`…) as the shopper reads it.
    static func networkName(_ network: String) -> String {
        let names = [
            "visa": "Visa", "mastercard": "Mastercard", "amex": "American Express", "discover": "Discover", "jcb": "JCB",
            "cartesbancaires": "Cartes Bancaires", "maestro": "Maestro", "interac": "Interac", "chinaunionpay": "UnionPay",
            "eftpos": "eftpos", "electron": "Visa Electron", "vpay": "V PAY", "girocard": "girocard",
        ]
        return names[network.lowercased()] ?? String(network.prefix(30))
    }

    static func decimal(_ minor: Int64, _ code: String) -> String {
        guard let currency = Currency(code: code) else { return String(minor) }
        return Money(minorUnits: minor, currency: currency).decimalString
    }
}
