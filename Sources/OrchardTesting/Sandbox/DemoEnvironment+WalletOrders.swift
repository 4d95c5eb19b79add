import Foundation

/// The demo's Wallet orders: an Order Type ID identity from the demo's test PKI, a logo, and
/// pushes to the mock APNs the demo starts.
extension DemoEnvironment {
    public static let orderTypeIdentifier = "order.dev.orchard.demo"
    /// A 16×16 green PNG: the demo shop's logo.
    static let logoPNG =
        Data(
            base64Encoded:
                "iVBORw0KGgoAAAANSUhEUgAAABAAAAAQCAIAAACQkWg2AAAAFklEQVR4nGPwWR9AEmIY1TCqYfhqAAD0tksQZKVeqgAAAABJRU5ErkJggg==")
        ?? Data()

    /// The mock APNs for this environment: its server certificate for 127.0.0.1, and the test CA
    /// (which issues the Order Type ID certificate) for the clients it accepts.
    public func makeAPNs() throws -> MockAPNs {
        try MockAPNs(server: material.server, clientCA: material.pki.ca.certificate)
    }

    /// `merchants[].walletOrders` for the demo merchant, its files written beside the configuration.
    func walletOrdersSection(webServiceURL: String, apnsPort: Int) throws -> [String: Any] {
        let issued = try material.pki.issueOrderTypeIdentity(orderTypeIdentifier: Self.orderTypeIdentifier)
        try issued.leaf.write(certificateTo: file("test-order-type.pem"), keyTo: file("test-order-type.key"))
        try Data(issued.intermediate.certificatePEM.utf8).write(to: URL(fileURLWithPath: file("test-wwdr.pem")))
        try Self.logoPNG.write(to: URL(fileURLWithPath: file("test-logo.png")))
        return [
            "orderTypeIdentifier": Self.orderTypeIdentifier, "identityCertificate": "test-order-type.pem",
            "identityKey": "test-order-type.key", "intermediateCertificate": "test-wwdr.pem", "webServiceURL": webServiceURL,
            "url": "http://localhost", "logo": "test-logo.png", "orderManagementURL": "http://localhost/orders/{orderNumber}",
            "apns": ["baseURL": "https://127.0.0.1:\(apnsPort)", "caFile": "test-ca.pem", "allowNonAppleHost": true],
        ]
    }
}
