import ApplePay
import CurlClient
import Foundation
import OrchardCore

/// Worldpay Access: `POST /payments/authorizations` with the Apple Pay token as `walletToken`;
/// Worldpay decrypts it. Settle and cancel follow the `_links` Worldpay returned.
public struct WorldpayProcessor: PaymentProcessor {
    public static let mediaType = "application/vnd.worldpay.payments-v7+json"

    let settings: WorldpaySettings
    let client: ProcessorHTTP

    public init(settings: WorldpaySettings, http: CurlHTTPClient) {
        self.settings = settings
        self.client = ProcessorHTTP(http: http, endpoint: settings.connection)
    }

    public var name: String { "worldpay" }

    var headers: [(name: String, value: String)] {
        let credentials = Data("\(settings.username.value):\(settings.password.value)".utf8).base64EncodedString()
        return [
            (name: "Authorization", value: "Basic \(credentials)"), (name: "Content-Type", value: Self.mediaType),
            (name: "Accept", value: Self.mediaType),
        ]
    }

    /// The request body: amounts in minor units, the token's `paymentData` as a JSON string.
    func body(_ request: AuthorizationRequest) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let walletToken = String(decoding: try encoder.encode(request.token.paymentData), as: UTF8.self)
        return try ProcessorHTTP.encode([
            "transactionReference": request.reference,
            "merchant": ["entity": settings.entity],
            "instruction": [
                "narrative": ["line1": settings.narrative],
                "value": ["currency": request.order.priced.currency, "amount": request.order.priced.total],
                "paymentInstrument": ["type": "card/wallet+applepay", "walletToken": walletToken],
            ],
        ])
    }

    public func authorize(_ request: AuthorizationRequest) async throws -> AuthorizationOutcome {
        let answer = try await client.send(
            "POST", url: settings.connection.baseURL + "/payments/authorizations", headers: headers, body: try body(request))
        switch answer.status {
        case 200..<300:
            let links = answer.json["_links"] as? [String: Any] ?? [:]
            func href(_ relation: String) -> String? { (links[relation] as? [String: Any])?["href"] as? String }
            switch answer.json["outcome"] as? String {
            case "authorized":
                var actions: [String: String] = [:]
                actions["settle"] = href("payments:settle")
                actions["cancel"] = href("payments:cancel")
                // Worldpay knows the payment by our transactionReference.
                return AuthorizationOutcome(status: .authorized, processorReference: request.reference, links: actions)
            case "refused":
                return AuthorizationOutcome(
                    status: .refused, code: Self.string(answer.json["code"]), message: answer.json["description"] as? String)
            default:
                throw ProcessorNoAnswer("Worldpay answered HTTP \(answer.status) without a known outcome")
            }
        case 400, 401, 403, 404, 415:
            // The request itself was refused (schema, credentials, route, media type).
            return AuthorizationOutcome(
                status: .failed, code: (answer.json["errorName"] as? String) ?? "http_\(answer.status)",
                message: answer.json["message"] as? String)
        default:
            // 5xx, 409 and every other status say nothing about whether the card was charged.
            throw ProcessorNoAnswer("Worldpay answered HTTP \(answer.status), not a definite outcome")
        }
    }

    /// Follows the settle link; the answer's `_links` carry the refund links, which only a
    /// settlement hands out.
    public func settle(_ payment: PaymentRecord) async throws(ProcessorActionError) -> [String: String] {
        let answer = try await follow(payment, "settle")
        return Self.actions(answer.json, ["refund", "partialRefund"], baseURL: settings.connection.baseURL)
    }

    public func cancel(_ payment: PaymentRecord) async throws(ProcessorActionError) {
        try await follow(payment, "cancel")
    }

    /// The answer's `_links` for these actions, as absolute URLs keyed by action. Worldpay's
    /// guides name the relations `payments:<action>` up to v6 and `cardPayments:<action>` in
    /// v7; either is read. An href without an origin is taken as on the configured one.
    static func actions(_ json: [String: Any], _ names: [String], baseURL: String) -> [String: String] {
        let links = json["_links"] as? [String: Any] ?? [:]
        var actions: [String: String] = [:]
        for action in names {
            let link = links["payments:\(action)"] ?? links["cardPayments:\(action)"]
            guard let href = (link as? [String: Any])?["href"] as? String else { continue }
            actions[action] = href.hasPrefix("/") ? baseURL + href : href
        }
        return actions
    }

    public func refund(_ request: RefundRequest) async throws -> RefundOutcome {
        // PLACEHOLDER: replaced by the refund calls in this branch's next commit.
        throw ProcessorActionError("Worldpay refunds are not built yet")
    }

    @discardableResult
    func follow(_ payment: PaymentRecord, _ action: String) async throws(ProcessorActionError) -> ProcessorHTTP.Answer {
        guard let url = payment.links[action] else { throw ProcessorActionError("Worldpay gave no \(action) link for this payment") }
        let answer: ProcessorHTTP.Answer
        do {
            answer = try await client.send("POST", url: url, headers: headers, body: nil)
        } catch let error as ProcessorActionError {
            throw error
        } catch {
            throw ProcessorActionError("Worldpay did not answer (\(error)); check the payment in Worldpay before retrying")
        }
        guard (200..<300).contains(answer.status) else {
            throw ProcessorActionError("Worldpay answered HTTP \(answer.status): \(answer.json["message"] as? String ?? "")")
        }
        return answer
    }

    static func string(_ value: Any?) -> String? {
        switch value {
        case let text as String: text
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }
}
