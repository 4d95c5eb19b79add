import ApplePay
import Foundation
import WalletOrders

/// The web service Wallet calls (developer.apple.com/documentation/walletorders): every order is
/// found by its type and identifier, and answers alike whether it is missing, another
/// merchant's, or asked for with the wrong token.
extension WalletOrderService {
    /// What a fetch of the latest package found.
    public enum Fetch: Sendable, Equatable {
        case unauthorized
        case notModified(lastModified: Date)
        case package(bytes: [UInt8], lastModified: Date)
    }

    /// What a registration did.
    public enum Registration: Sendable, Equatable {
        case created, existing, unauthorized
        /// The order has ``devicesPerOrder`` devices already.
        case tooManyDevices
    }

    /// `GET /v1/devices/{device}/registrations/{type}`'s answer.
    public struct Changed: Sendable, Codable, Equatable {
        public var orderIdentifiers: [String]
        /// The tag Wallet sends back as `ordersModifiedSince`: the newest change listed, in seconds since 1970.
        public var lastModified: String
    }

    /// The latest package, unless `ifModifiedSince` is as new as the order.
    public func package(orderTypeIdentifier: String, orderIdentifier: String, authorization: String?, ifModifiedSince: Date?)
        async throws -> Fetch
    {
        guard let (record, settings, token) = try await authenticated(orderTypeIdentifier, orderIdentifier, authorization) else {
            return .unauthorized
        }
        if let ifModifiedSince, ifModifiedSince >= record.updatedAt { return .notModified(lastModified: record.updatedAt) }
        guard let payment = try await store.payment(id: record.paymentId), let order = try await store.order(id: payment.orderId) else {
            throw CoreError(.inconsistent, "the Wallet order \(record.orderIdentifier)'s payment or order is missing")
        }
        let sources = WalletOrderContent.Sources(
            record: record, order: order, payment: payment, refunds: try await store.refunds(paymentId: payment.id),
            request: try await store.paymentRequest(id: payment.orderId))
        let content = WalletOrderContent.order(
            sources, settings: settings, merchantIdentifier: record.merchantIdentifier, authenticationToken: token)
        let images = settings.logoPNG.map { [StoredZip.Entry(path: "logo.png", bytes: $0)] } ?? []
        do {
            let bytes = try WalletOrderPackage.build(content, images: images, signer: settings.identity, signingTime: time.now)
            return .package(bytes: bytes, lastModified: record.updatedAt)
        } catch {
            throw CoreError(.inconsistent, "the Wallet order \(record.orderIdentifier) cannot be packaged: \(error.message)")
        }
    }

    /// Registers a device for the order's pushes (or updates its push token).
    public func register(
        deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String, authorization: String?, pushToken: String
    ) async throws -> Registration {
        guard Self.isDeviceIdentifier(deviceIdentifier),
            try await authenticated(orderTypeIdentifier, orderIdentifier, authorization) != nil
        else { return .unauthorized }
        guard Self.isPushToken(pushToken) else { throw CoreError(.invalidRequest, "pushToken must be the device's APNs token in hex") }
        let registration = WalletOrderRegistration(
            deviceIdentifier: deviceIdentifier, orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: orderIdentifier,
            pushToken: pushToken.lowercased(), createdAt: time.now)
        switch try await store.registerWalletDevice(registration, limit: Self.devicesPerOrder) {
        case true?: return .created
        case false?: return .existing
        case nil: return .tooManyDevices
        }
    }

    /// Unregisters a device; false when the call is not authorized.
    public func unregister(deviceIdentifier: String, orderTypeIdentifier: String, orderIdentifier: String, authorization: String?)
        async throws -> Bool
    {
        guard Self.isDeviceIdentifier(deviceIdentifier),
            try await authenticated(orderTypeIdentifier, orderIdentifier, authorization) != nil
        else { return false }
        _ = try await store.unregisterWalletDevice(
            deviceIdentifier: deviceIdentifier, orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: orderIdentifier)
        return true
    }

    /// The device's orders of the type changed since the tag; nil when none did (Wallet's 204).
    /// Apple documents no token for this call: it answers identifiers only, of orders the device
    /// itself registered for with their tokens.
    public func changed(deviceIdentifier: String, orderTypeIdentifier: String, since tag: String?) async throws -> Changed? {
        guard Self.isDeviceIdentifier(deviceIdentifier), orderTypeIdentifier.utf8.count <= 255,
            merchants.walletOrderMerchant(orderTypeIdentifier: orderTypeIdentifier) != nil
        else { return nil }
        let since = tag.flatMap { Int64($0) }.map { Date(timeIntervalSince1970: TimeInterval($0)) }
        let orders = try await store.walletOrders(
            deviceIdentifier: deviceIdentifier, orderTypeIdentifier: orderTypeIdentifier, changedAfter: since, limit: 100)
        guard let newest = orders.map(\.updatedAt).max() else { return nil }
        return Changed(orderIdentifiers: orders.map(\.orderIdentifier), lastModified: String(Int64(newest.timeIntervalSince1970)))
    }

    /// The order, its merchant's settings and the token, when `authorization` is
    /// `AppleOrder <token>` for it; the token's hash is compared in constant time even when there is no order.
    func authenticated(_ orderTypeIdentifier: String, _ orderIdentifier: String, _ authorization: String?) async throws -> (
        WalletOrderRecord, WalletOrdersSettings, String
    )? {
        guard let authorization, authorization.utf8.count <= 300, authorization.hasPrefix("AppleOrder ") else { return nil }
        let token = String(authorization.dropFirst("AppleOrder ".count))
        guard !token.isEmpty, orderTypeIdentifier.utf8.count <= 255, RecordIdentifier.isLookup(orderIdentifier),
            let (merchantIdentifier, settings) = merchants.walletOrderMerchant(orderTypeIdentifier: orderTypeIdentifier)
        else { return nil }
        let record = try await store.walletOrder(orderTypeIdentifier: orderTypeIdentifier, orderIdentifier: orderIdentifier)
        let matches = ConstantTime.equal(Self.hash(token), record?.authenticationTokenHash ?? Array(repeating: 0, count: 32))
        guard let record, matches, record.merchantIdentifier == merchantIdentifier else { return nil }
        return (record, settings, token)
    }

    static func isDeviceIdentifier(_ value: String) -> Bool {
        (1...128).contains(value.utf8.count) && value.utf8.allSatisfy { FulfillmentRequest.isIdentifierByte($0) }
    }

    static func isPushToken(_ value: String) -> Bool {
        (32...200).contains(value.utf8.count) && value.utf8.count % 2 == 0 && Hex.decode(value) != nil
    }
}
