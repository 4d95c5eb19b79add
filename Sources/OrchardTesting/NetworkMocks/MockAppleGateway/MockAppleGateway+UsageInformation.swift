import ApplePay
import Crypto
import Foundation
import OrchardCore
import Synchronization

/// How the mock answers `…/merchantToken/publicKey` for a token.
public enum MockTokenKeyMode: String, Sendable, CaseIterable {
    /// 200 with the token's P-384 key (made on first use) and Apple's ciphersuite.
    case ready
    /// 202: the device has not made the key yet.
    case notReady
    /// 409 until `updateMerchantMetadata` gives the token a notification URL, then as `ready`.
    case conflict
}

/// A `…/merchantToken/notify` call the mock took: the metadata as sent, for a test to open.
public struct ReceivedUsageNotification: Sendable, Equatable {
    public var merchantTokenIdentifier: String
    /// `merchantTokenUsageMetadata`, Apple's field names.
    public var metadata: [String: String]
}

/// The mock's side of merchant token usage information: each token's key (the device's, as
/// Apple hands it out), how `publicKey` answers, and what `notify` received.
final class MockUsageInformation: Sendable {
    struct State {
        var keys: [String: P384.KeyAgreement.PrivateKey] = [:]
        var modes: [String: MockTokenKeyMode] = [:]
        var defaultMode = MockTokenKeyMode.ready
        var notificationURLs: [String: String] = [:]
        var notifications: [ReceivedUsageNotification] = []
        /// The status each `publicKey` call got, by token.
        var keyAnswers: [String: [Int]] = [:]
    }

    let state = Mutex(State())
}

extension MockAppleGateway {
    static let usageControlPrefix = "/_mock/merchant-tokens/"

    /// The token's private key (the device's): made on first use, as Apple would hand out its public half.
    public func usageKey(for token: String) -> P384.KeyAgreement.PrivateKey {
        usage.state.withLock { state in
            if let key = state.keys[token] { return key }
            let key = P384.KeyAgreement.PrivateKey()
            state.keys[token] = key
            return key
        }
    }

    /// Makes `key` the token's key (a test that plays the device with its own key).
    public func setUsageKey(_ key: P384.KeyAgreement.PrivateKey, for token: String) {
        usage.state.withLock { $0.keys[token] = key }
    }

    /// How `publicKey` answers for `token`, or for every token without a mode of its own when nil.
    public func setTokenKeyMode(_ mode: MockTokenKeyMode, for token: String? = nil) {
        usage.state.withLock { state in
            if let token { state.modes[token] = mode } else { state.defaultMode = mode }
        }
    }

    /// Every `notify` the mock took, oldest first.
    public var usageNotifications: [ReceivedUsageNotification] { usage.state.withLock { $0.notifications } }

    /// The notification URL `updateMerchantMetadata` gave each token.
    public var tokenNotificationURLs: [String: String] { usage.state.withLock { $0.notificationURLs } }

    /// Answers `publicKey`, `updateMerchantMetadata` and `notify` (already authorised by certificate and headers).
    func usageCall(_ call: String, body: [UInt8]) -> (status: Int, body: [UInt8])? {
        guard ["publicKey", "updateMerchantMetadata", "notify"].contains(call) else { return nil }
        func error(_ status: Int, _ message: String) -> (status: Int, body: [UInt8]) {
            (status, Self.appleError(status: status, message: "Payment Services Exception " + message))
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let token = object["merchantTokenIdentifier"] as? String, MerchantTokenEvent.isValidIdentifier(token)
        else { return error(400, "merchantTokenIdentifier is required") }
        switch call {
        case "publicKey":
            let mode = usage.state.withLock { state in
                let mode = state.modes[token] ?? state.defaultMode
                let answered: MockTokenKeyMode = mode == .conflict && state.notificationURLs[token] != nil ? .ready : mode
                state.keyAnswers[token, default: []].append(answered == .ready ? 200 : answered == .notReady ? 202 : 409)
                return answered
            }
            switch mode {
            case .notReady: return (202, Array(#"{"statusCode":202}"#.utf8))
            case .conflict: return error(409, "merchantTokenIdentifier=\(token) has no tokenNotificationURL")
            case .ready:
                let key = usageKey(for: token).publicKey.x963Representation.base64EncodedString()
                return (
                    200,
                    Self.jsonBytes([
                        "merchantTokenPublicKey": key, "supportedCiphersuite": UsageInformationSeal.ciphersuite, "statusCode": 200,
                    ])
                )
            }
        case "updateMerchantMetadata":
            guard let metadata = object["merchantMetadata"] as? [String: Any], let url = metadata["tokenNotificationURL"] as? String,
                url.hasPrefix("https://") || url.hasPrefix("http://")
            else { return error(400, "merchantMetadata.tokenNotificationURL is required") }
            usage.state.withLock { $0.notificationURLs[token] = url }
            return (200, Array("{}".utf8))
        default:
            return notifyCall(token: token, object: object)
        }
    }

    /// `notify`: every field Apple requires, as strings, Apple's ciphersuite, `data` within 4000
    /// characters, and the token key's hash matching the key the mock handed out.
    private func notifyCall(token: String, object: [String: Any]) -> (status: Int, body: [UInt8]) {
        let fields = ["ciphersuite", "data", "ephemeralPublicKey", "infoHash", "merchantPublicKey", "merchantTokenPublicKeyHash"]
        guard let metadata = object["merchantTokenUsageMetadata"] as? [String: Any] else {
            return (400, Self.appleError(status: 400, message: "merchantTokenUsageMetadata is required"))
        }
        var strings: [String: String] = [:]
        for field in fields {
            guard let value = metadata[field] as? String, !value.isEmpty else {
                return (400, Self.appleError(status: 400, message: "merchantTokenUsageMetadata.\(field) is required"))
            }
            strings[field] = value
        }
        let expectedHash = Hex.encode(Array(SHA256.hash(data: usageKey(for: token).publicKey.x963Representation)))
        guard strings["ciphersuite"] == UsageInformationSeal.ciphersuite, (strings["data"]?.count ?? 0) <= 4000,
            strings["merchantTokenPublicKeyHash"] == expectedHash
        else { return (400, Self.appleError(status: 400, message: "merchantTokenUsageMetadata does not match the token's key")) }
        usage.state.withLock { $0.notifications.append(ReceivedUsageNotification(merchantTokenIdentifier: token, metadata: strings)) }
        return (200, Array("{}".utf8))
    }

    /// `GET /_mock/merchant-tokens/{token}` (and `POST` with `{"keyMode"?, "privateKey"?}` first):
    /// the token's private key (PKCS#8 PEM), public key, key mode, notification URL, the status of
    /// each `publicKey` call and every metadata `notify` took for it, for a test in another process
    /// playing Apple and the device.
    func usageControl(method: String, path: String, body: [UInt8]) -> (status: Int, body: [UInt8]) {
        let token = String(path.dropFirst(Self.usageControlPrefix.count))
        guard MerchantTokenEvent.isValidIdentifier(token) else {
            return (400, Self.jsonBytes(["error": "not a merchant token identifier"]))
        }
        if method == "POST" {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
                return (400, Self.jsonBytes(["error": "the body must be a JSON object"]))
            }
            if let text = object["keyMode"] as? String {
                guard let mode = MockTokenKeyMode(rawValue: text) else {
                    return (400, Self.jsonBytes(["error": "keyMode is ready, notReady or conflict"]))
                }
                setTokenKeyMode(mode, for: token)
            }
            if let pem = object["privateKey"] as? String {
                guard let key = try? P384.KeyAgreement.PrivateKey(pemRepresentation: pem) else {
                    return (400, Self.jsonBytes(["error": "privateKey must be a P-384 private key in PEM"]))
                }
                setUsageKey(key, for: token)
            }
        }
        let key = usageKey(for: token)
        let (mode, url, notifications, answers) = usage.state.withLock {
            (
                $0.modes[token] ?? $0.defaultMode, $0.notificationURLs[token],
                $0.notifications.filter { $0.merchantTokenIdentifier == token },
                $0.keyAnswers[token] ?? []
            )
        }
        var answer: [String: Any] = [
            "merchantTokenIdentifier": token, "privateKey": key.pemRepresentation,
            "publicKey": key.publicKey.x963Representation.base64EncodedString(),
            "keyMode": mode.rawValue, "notifications": notifications.map(\.metadata), "publicKeyAnswers": answers,
        ]
        answer["tokenNotificationURL"] = url
        return (200, Self.jsonBytes(answer))
    }

    static func jsonBytes(_ object: [String: Any]) -> [UInt8] {
        Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])) ?? Data())
    }
}
