import Foundation

extension WalletOrder {
    /// A `ShippingFulfillment` or a `PickupFulfillment`, told apart by ``kind`` as Apple's
    /// `fulfillmentType` tells them; keys that belong to the other kind stay nil.
    public struct Fulfillment: Codable, Sendable, Equatable {
        public enum Kind: String, Codable, Sendable, CaseIterable {
            case shipping, pickup
        }

        /// Opaque and unique within the order: Wallet follows a fulfilment's changes by it.
        public var fulfillmentIdentifier: String
        public var kind: Kind
        /// One of ``statuses(of:)`` for its kind.
        public var status: String
        public var statusDescription: String?
        public var notes: String?
        public var lineItems: [LineItem]?
        // Shipping.
        public var carrier: String?
        public var trackingNumber: String?
        public var trackingURL: String?
        public var shippedAt: Date?
        public var estimatedDeliveryAt: Date?
        public var deliveredAt: Date?
        // Pickup.
        /// The pickup place's name: required for a pickup.
        public var displayName: String?
        public var pickupAt: Date?
        public var pickedUpAt: Date?

        public init(fulfillmentIdentifier: String, kind: Kind, status: String) {
            self.fulfillmentIdentifier = fulfillmentIdentifier
            self.kind = kind
            self.status = status
        }

        /// The statuses Apple lists for each kind.
        public static func statuses(of kind: Kind) -> [String] {
            switch kind {
            case .shipping: ["open", "processing", "onTheWay", "outForDelivery", "delivered", "shipped", "issue", "cancelled"]
            case .pickup: ["open", "processing", "readyForPickup", "pickedUp", "issue", "cancelled"]
            }
        }

        enum CodingKeys: String, CodingKey {
            case fulfillmentIdentifier, status, statusDescription, notes, lineItems
            case kind = "fulfillmentType"
            case carrier, trackingNumber, trackingURL, shippedAt, estimatedDeliveryAt, deliveredAt
            case displayName, pickupAt, pickedUpAt
        }
    }
}
