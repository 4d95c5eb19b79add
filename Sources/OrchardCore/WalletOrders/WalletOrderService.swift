import ApplePay
import Crypto
import Foundation
import Logging
import WalletOrders

/// Which merchants offer Wallet orders, by merchant and by order type (each type is one merchant's).
public protocol WalletOrderMerchants: Sendable {
    func walletOrders(of merchantIdentifier: String) -> WalletOrdersSettings?
    func walletOrderMerchant(orderTypeIdentifier: String) -> (merchantIdentifier: String, settings: WalletOrdersSettings)?
}

/// What the page and `/v1` hand Apple Pay as `orderDetails` (Apple Pay JS's `ApplePayPaymentOrderDetails`).
public struct WalletOrderDetails: Sendable, Codable, Equatable {
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    public var webServiceURL: String
    public var authenticationToken: String
}

/// Wallet orders: made when a payment is authorized, changed by the shop's fulfilments and the
/// payment's refunds and cancellation, each change pushed to the devices Wallet registered.
public struct WalletOrderService: Sendable {
    public typealias Store = WalletOrderRecords & OrderPayments & Refunds & PaymentRequests
    let store: any Store
    let merchants: any WalletOrderMerchants
    let time: TimeSource
    let logger: Logger

    /// Devices one order may have: a shopper's own, with room to spare, but no amplifier for pushes.
    public static let devicesPerOrder = 10
    /// Fulfilments one order may have.
    public static let fulfillmentsPerOrder = 20

    public init(store: any Store, merchants: any WalletOrderMerchants, time: TimeSource, logger: Logger) {
        self.store = store
        self.merchants = merchants
        self.time = time
        self.logger = logger
    }

    /// The Wallet order for a payment just authorized, when its merchant offers them: its
    /// `orderDetails`, with a fresh token Orchard keeps only the hash of. Nil when the merchant
    /// does not, when the payment has one already (its token cannot be given again), or when the
    /// store failed: the payment stands either way, and Wallet is never promised an order that
    /// was not recorded.
    public func issue(for payment: PaymentRecord, merchantIdentifier: String, mandateCharge: Bool = false) async -> WalletOrderDetails? {
        guard let settings = merchants.walletOrders(of: merchantIdentifier), !mandateCharge || settings.mandateCharges else { return nil }
        guard [.authorized, .settled].contains(payment.state) else { return nil }
        let token = Self.newToken()
        let now = Self.wholeSeconds(time.now)
        let record = WalletOrderRecord(
            orderIdentifier: RecordIdentifier.random(), orderTypeIdentifier: settings.orderTypeIdentifier,
            merchantIdentifier: merchantIdentifier, paymentId: payment.id, authenticationTokenHash: Self.hash(token), createdAt: now,
            updatedAt: now)
        do {
            let stored = try await store.createWalletOrder(record)
            guard stored.created else { return nil }
            return WalletOrderDetails(
                orderTypeIdentifier: record.orderTypeIdentifier, orderIdentifier: record.orderIdentifier,
                webServiceURL: settings.webServiceURL, authenticationToken: token)
        } catch {
            logger.error("wallet order not recorded", metadata: ["payment": "\(payment.id)", "error": "\(error)"])
            return nil
        }
    }

    /// ``issue(for:merchantIdentifier:mandateCharge:)`` for the payment with this ID.
    public func issue(paymentId: String, merchantIdentifier: String, mandateCharge: Bool) async -> WalletOrderDetails? {
        guard let payment = try? await store.payment(id: paymentId) else { return nil }
        return await issue(for: payment, merchantIdentifier: merchantIdentifier, mandateCharge: mandateCharge)
    }

    /// Adds the fulfilment, or replaces the one with its identifier, on the Wallet order of the
    /// merchant's payment; every registered device is pushed and the shop told (`wallet_order.updated`).
    public func fulfill(_ request: FulfillmentRequest, paymentId: String, merchantIdentifier: String) async throws -> WalletOrderView {
        let fulfillment = try request.validated()
        for _ in 0..<5 {
            let (record, _) = try await owned(paymentId: paymentId, merchantIdentifier: merchantIdentifier)
            var fulfillments = record.fulfillments
            if let index = fulfillments.firstIndex(where: { $0.fulfillmentIdentifier == fulfillment.fulfillmentIdentifier }) {
                fulfillments[index] = fulfillment
            } else {
                guard fulfillments.count < Self.fulfillmentsPerOrder else {
                    throw CoreError(.invalidRequest, "the order has \(Self.fulfillmentsPerOrder) fulfillments, the most it may have")
                }
                fulfillments.append(fulfillment)
            }
            if let changed = try await change(record, fulfillments: fulfillments) { return changed }
        }
        throw CoreError(.paymentInProgress, "the Wallet order changed while it was being updated; send the fulfillment again")
    }

    /// Tells Wallet that the payment changed (a refund, a cancellation): the order is built from
    /// the payment again on the next fetch, so a new version and a push are all it takes.
    public func paymentChanged(paymentId: String) async {
        do {
            for _ in 0..<5 {
                guard let record = try await store.walletOrder(paymentId: paymentId) else { return }
                if try await change(record, fulfillments: record.fulfillments) != nil { return }
            }
        } catch {
            logger.error("wallet order not updated", metadata: ["payment": "\(paymentId)", "error": "\(error)"])
        }
    }

    /// The merchant's payment's Wallet order, as the shop sees it.
    public func view(paymentId: String, merchantIdentifier: String) async throws -> WalletOrderView {
        let (record, settings) = try await owned(paymentId: paymentId, merchantIdentifier: merchantIdentifier)
        return WalletOrderView(record, webServiceURL: settings.webServiceURL)
    }

    /// The next version of `record` with `fulfillments`, written over its version with its event;
    /// nil when another change came first.
    func change(_ record: WalletOrderRecord, fulfillments: [WalletOrder.Fulfillment]) async throws -> WalletOrderView? {
        guard let settings = merchants.walletOrders(of: record.merchantIdentifier) else { return nil }
        var next = record
        next.fulfillments = fulfillments
        next.version += 1
        next.updatedAt = max(Self.wholeSeconds(time.now), record.updatedAt.addingTimeInterval(1))
        let view = WalletOrderView(next, webServiceURL: settings.webServiceURL)
        let payment = try await store.payment(id: record.paymentId)
        var request: PaymentRequestRecord?
        if let payment { request = try await store.paymentRequest(id: payment.orderId) }
        let event = try WebhookEvent.make(
            walletOrder: view, merchantIdentifier: record.merchantIdentifier, payment: payment, request: request, at: time.now)
        guard let devices = try await store.updateWalletOrder(next, event: event) else { return nil }
        logger.info(
            "wallet order updated",
            metadata: ["payment": "\(record.paymentId)", "version": "\(next.version)", "devices": "\(devices)"])
        return view
    }

    /// The merchant's payment's Wallet order, or `notFound` alike for another merchant's, a
    /// payment without one, or a merchant without Wallet orders.
    func owned(paymentId: String, merchantIdentifier: String) async throws -> (WalletOrderRecord, WalletOrdersSettings) {
        guard RecordIdentifier.isLookup(paymentId), let settings = merchants.walletOrders(of: merchantIdentifier),
            let record = try await store.walletOrder(paymentId: paymentId), record.merchantIdentifier == merchantIdentifier
        else { throw CoreError(.notFound, "no Wallet order for payment \(paymentId)") }
        return (record, settings)
    }

    /// 32 random bytes, base64url: far past Apple's 16-character minimum.
    static func newToken() -> String {
        let bytes = SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }
        return Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func hash(_ token: String) -> [UInt8] { Array(SHA256.hash(data: Array(token.utf8))) }

    /// `date` to the whole second: `Last-Modified` carries no more, and a version must show as newer.
    static func wholeSeconds(_ date: Date) -> Date { Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)) }
}
