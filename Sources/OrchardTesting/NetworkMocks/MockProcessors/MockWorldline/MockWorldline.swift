import ApplePay
import Foundation
import Synchronization

/// A Worldline Direct account the mock accepts.
public struct MockWorldlineAccount: Sendable {
    public var merchantId: String
    public var apiKeyId: String
    public var secretApiKey: String

    public init(merchantId: String, apiKeyId: String, secretApiKey: String) {
        self.merchantId = merchantId
        self.apiKeyId = apiKeyId
        self.secretApiKey = secretApiKey
    }
}

/// The stand-in for Worldline Direct behind ``MockProcessors``: v1HMAC-signed CreatePayment
/// (Apple Pay and merchant-initiated), capture, cancel, refunds, GetPayment and GetRefunds with
/// the statuses a test moves them to, and token deletion, all under `/v2/{merchantId}/`.
final class MockWorldline: MockProcessorAPI {
    let name = "worldline"
    let account: MockWorldlineAccount
    /// Payments' statuses, by payment ID, as GetPayment answers them
    /// (``MockProcessors/setWorldlineStatus(_:ofPayment:)``). Taken inside the shared state's lock, never around it.
    let statuses = Mutex<[String: MockWorldlineStatus]>([:])

    init(account: MockWorldlineAccount) {
        self.account = account
    }

    func handle(_ request: MockProcessorRequest, mock: MockProcessors) -> Reply? {
        let path = request.path
        guard path.hasPrefix("/v2/") else { return nil }
        let payments = "/v2/\(account.merchantId)/payments"
        let tokens = "/v2/\(account.merchantId)/tokens/"
        switch request.method {
        case "POST" where path.hasPrefix(payments + "/") && path.hasSuffix("/refund"):
            return worldlineRefund(request, prefix: payments + "/", mock: mock)
        case "DELETE" where path.hasPrefix(tokens):
            return worldlineDeleteToken(request, id: String(path.dropFirst(tokens.count)), mock: mock)
        case "GET" where path.hasPrefix(payments + "/"): return worldlineQueryRoute(request, mock: mock)
        case "GET" where path.hasPrefix("/v2/\(account.merchantId)/products/"): return worldlineProduct(request)
        case "POST" where path == payments: return worldlineCreate(request, mock: mock)
        case "POST" where path.hasPrefix(payments + "/"): return worldlineAction(request, prefix: payments, mock: mock)
        default:
            return Self.reply(404, ["errorId": UUID().uuidString, "errors": [["code": "9007", "message": "UNKNOWN_MERCHANT"]]])
        }
    }

    /// A CreatePayment's `X-GCS-Idempotence-Key`.
    func authorizationReference(_ request: MockProcessorRequest) -> String? {
        guard request.method == "POST", request.path == "/v2/\(account.merchantId)/payments" else { return nil }
        return request.header("X-GCS-Idempotence-Key") ?? ""
    }

    /// Worldline's parts of an EC_v1 token (the encrypted data, the ephemeral key and the key's
    /// hash) as a token a held key can decrypt (``MockProcessors/heldKeyRefusal(_:amount:currency:)``);
    /// Worldline is not sent the signature or transaction ID.
    static func heldKeyToken(_ input: [String: Any]) -> PaymentData? {
        guard let data = input["encryptedPaymentData"] as? String, let ephemeral = input["ephemeralKey"] as? String,
            let hash = input["publicKeyHash"] as? String
        else { return nil }
        return PaymentData(
            version: "EC_v1", data: data, signature: "AA==",
            header: .init(ephemeralPublicKey: ephemeral, publicKeyHash: hash, transactionId: "00"))
    }
}
