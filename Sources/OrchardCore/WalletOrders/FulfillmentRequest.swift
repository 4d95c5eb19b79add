import Foundation
import WalletOrders

/// `POST /v1/payments/{id}/fulfillments`: a shipping or pickup fulfilment as the shop sends it,
/// checked against Apple's schema and Orchard's bounds before anything is written.
public struct FulfillmentRequest: Sendable, Codable, Equatable {
    /// The shop's identifier for the fulfilment: the same one again replaces it.
    public var fulfillmentIdentifier: String
    /// `shipping` or `pickup`.
    public var type: WalletOrder.Fulfillment.Kind
    public var status: String
    public var statusDescription: String?
    public var notes: String?
    public var carrier: String?
    public var trackingNumber: String?
    public var trackingURL: String?
    public var shippedAt: String?
    public var estimatedDeliveryAt: String?
    public var deliveredAt: String?
    /// The pickup place's name (required for a pickup).
    public var displayName: String?
    public var pickupAt: String?
    public var pickedUpAt: String?
    // Dates are RFC 3339 strings (`2026-12-01T10:00:00Z`), read in ``validated()``.
    /// What this fulfilment carries, when not the whole order.
    public var items: [Item]?

    /// One line of the fulfilment.
    public struct Item: Sendable, Codable, Equatable {
        public var title: String
        public var quantity: Int
        public var sku: String?
        public init(title: String, quantity: Int, sku: String? = nil) {
            self.title = title
            self.quantity = quantity
            self.sku = sku
        }
    }

    public init(fulfillmentIdentifier: String, type: WalletOrder.Fulfillment.Kind, status: String) {
        self.fulfillmentIdentifier = fulfillmentIdentifier
        self.type = type
        self.status = status
    }

    /// The fulfilment as `order.json` carries it, or `invalidRequest` naming the first field that breaks a rule.
    public func validated() throws(CoreError) -> WalletOrder.Fulfillment {
        let identifier = fulfillmentIdentifier.utf8
        guard (1...64).contains(identifier.count), identifier.allSatisfy(Self.isIdentifierByte) else {
            throw CoreError(.invalidRequest, "fulfillmentIdentifier must be 1 to 64 letters, digits, '.', '_' or '-'")
        }
        let statuses = WalletOrder.Fulfillment.statuses(of: type)
        guard statuses.contains(status) else {
            throw CoreError(.invalidRequest, "status must be one of \(statuses.joined(separator: ", ")) for a \(type.rawValue) fulfillment")
        }
        for (name, value, limit) in [
            ("statusDescription", statusDescription, 500), ("notes", notes, 1000), ("carrier", carrier, 100),
            ("trackingNumber", trackingNumber, 100), ("displayName", displayName, 200),
        ] {
            if let value,
                value.isEmpty || value.count > limit || value.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
            {
                throw CoreError(.invalidRequest, "\(name) must be 1 to \(limit) characters of text")
            }
        }
        if let url = trackingURL {
            guard url.utf8.count <= 2048, let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
                components.host?.isEmpty == false, components.user == nil, components.password == nil
            else { throw CoreError(.invalidRequest, "trackingURL must be an https URL of at most 2048 bytes") }
        }
        try checkKind()
        let lines = try items.map { items throws(CoreError) in try Self.lineItems(items) }
        var fulfillment = WalletOrder.Fulfillment(fulfillmentIdentifier: fulfillmentIdentifier, kind: type, status: status)
        fulfillment.statusDescription = statusDescription
        fulfillment.notes = notes
        fulfillment.lineItems = lines
        fulfillment.carrier = carrier
        fulfillment.trackingNumber = trackingNumber
        fulfillment.trackingURL = trackingURL
        fulfillment.shippedAt = try Self.date(shippedAt, "shippedAt")
        fulfillment.estimatedDeliveryAt = try Self.date(estimatedDeliveryAt, "estimatedDeliveryAt")
        fulfillment.deliveredAt = try Self.date(deliveredAt, "deliveredAt")
        fulfillment.displayName = displayName
        fulfillment.pickupAt = try Self.date(pickupAt, "pickupAt")
        fulfillment.pickedUpAt = try Self.date(pickedUpAt, "pickedUpAt")
        return fulfillment
    }

    /// Shipping keys on a pickup, or pickup keys on a shipping, are refused rather than dropped.
    func checkKind() throws(CoreError) {
        switch type {
        case .shipping:
            let pickupKeys = [displayName != nil, pickupAt != nil, pickedUpAt != nil]
            guard !pickupKeys.contains(true) else {
                throw CoreError(.invalidRequest, "displayName, pickupAt and pickedUpAt belong to a pickup fulfillment")
            }
        case .pickup:
            guard displayName != nil else { throw CoreError(.invalidRequest, "a pickup fulfillment needs displayName (the place)") }
            let shippingKeys =
                [carrier, trackingNumber, trackingURL].contains { $0 != nil }
                || [shippedAt, estimatedDeliveryAt, deliveredAt].contains { $0 != nil }
            guard !shippingKeys else {
                throw CoreError(
                    .invalidRequest,
                    "carrier, trackingNumber, trackingURL, shippedAt, estimatedDeliveryAt and deliveredAt belong to a shipping fulfillment")
            }
        }
    }

    /// An RFC 3339 date between 2000 and 2100, or `invalidRequest` naming the field.
    static func date(_ text: String?, _ name: String) throws(CoreError) -> Date? {
        guard let text else { return nil }
        let date =
            text.utf8.count <= 40
            ? (try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)) ?? (try? Date.ISO8601FormatStyle().parse(text))
            : nil
        guard let date, (946_684_800...4_102_444_800).contains(date.timeIntervalSince1970) else {
            throw CoreError(.invalidRequest, "\(name) must be an RFC 3339 date like 2026-12-01T10:00:00Z")
        }
        return date
    }

    static func lineItems(_ items: [Item]) throws(CoreError) -> [WalletOrder.LineItem] {
        guard (1...100).contains(items.count) else { throw CoreError(.invalidRequest, "items must hold 1 to 100 items") }
        var lines: [WalletOrder.LineItem] = []
        for item in items {
            guard (1...200).contains(item.title.count), (1...10_000).contains(item.quantity), (item.sku?.count ?? 1) <= 100 else {
                throw CoreError(.invalidRequest, "each item needs a title of 1 to 200 characters and a quantity from 1 to 10000")
            }
            lines.append(WalletOrder.LineItem(title: item.title, quantity: item.quantity, price: nil, sku: item.sku))
        }
        return lines
    }

    static func isIdentifierByte(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            || [UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-")].contains(byte)
    }
}

/// A Wallet order as the shop sees it (`/v1` and the `wallet_order.updated` event).
public struct WalletOrderView: Sendable, Codable, Equatable {
    public var orderTypeIdentifier: String
    public var orderIdentifier: String
    public var paymentId: String
    public var webServiceURL: String
    public var version: Int
    public var createdAt: Date
    public var updatedAt: Date
    public var fulfillments: [WalletOrder.Fulfillment]

    public init(_ record: WalletOrderRecord, webServiceURL: String) {
        orderTypeIdentifier = record.orderTypeIdentifier
        orderIdentifier = record.orderIdentifier
        paymentId = record.paymentId
        self.webServiceURL = webServiceURL
        version = record.version
        createdAt = record.createdAt
        updatedAt = record.updatedAt
        fulfillments = record.fulfillments
    }
}
