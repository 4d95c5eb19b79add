import ApplePay
import Foundation
import Logging

/// Asks the shop's quote URL to price a change the shopper made on the sheet: signed like
/// webhooks, answered within 3 s or not at all. Any failure keeps the old total and fails the
/// update, so the sheet never shows a total the shop did not give.
public struct QuoteClient: Sendable {
    let transport: any ShopTransport
    let time: TimeSource
    let logger: Logger

    public init(transport: any ShopTransport, time: TimeSource, logger: Logger) {
        self.transport = transport
        self.time = time
        self.logger = logger
    }

    /// How long the shop has to answer: the shopper is waiting on the sheet.
    public static let deadline = Duration.seconds(3)
    /// The codes Apple Pay JS accepts in an update's errors.
    public static let appleErrorCodes: Set<String> = [
        "shippingContactInvalid", "billingContactInvalid", "addressUnserviceable", "couponCodeInvalid", "couponCodeExpired", "unknown",
    ]

    /// The shop's answer to `request`: a 2xx quote within ``deadline`` whose errors are Apple Pay's
    /// codes. Its cart is checked by ``OrderService``, which reports a bad one with ``failure(_:_:detail:)``.
    public func quote(_ request: QuoteRequest, endpoint: WebhookEndpoint, merchant: String) async throws(CoreError) -> QuoteAnswer {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(request)).map(Array.init) ?? []
        let headers: [(name: String, value: String)] =
            [
                (name: "Content-Type", value: "application/json"), (name: "Accept", value: "application/json"),
                (name: "User-Agent", value: "Orchard-Quotes/1"),
            ] + endpoint.signatureHeaders(id: "quo_" + RecordIdentifier.random(), body: body, at: time.now)
        let answer: (status: Int, body: [UInt8])
        do {
            answer = try await transport.post(to: endpoint, headers: headers, body: body, timeout: Self.deadline, merchant: merchant)
        } catch is ShopCallsBusy {
            throw failure("is already asked as often as outbound.maxShopCallsPerMerchant allows", request)
        } catch {
            // The transport's reason (a timeout, a refused address) goes to the log; the shopper's
            // page only learns that the shop could not be asked.
            throw failure("could not be reached or did not answer within 3 s", request, detail: "\(error)")
        }
        guard (200..<300).contains(answer.status) else { throw failure("answered HTTP \(answer.status)", request) }
        guard let quote = try? JSONDecoder().decode(QuoteAnswer.self, from: Data(answer.body)) else {
            throw failure("answered something other than a quote ({amount, lineItems, shippingMethods, …})", request)
        }
        guard (quote.errors ?? []).allSatisfy({ Self.appleErrorCodes.contains($0.code) }) else {
            throw failure("answered an error code Apple Pay does not know", request)
        }
        return quote
    }

    /// - Parameter detail: for the log only (a transport error may name addresses the shopper has no business seeing).
    /// Logs why the shop's price was not taken and says so to the shopper's page.
    public func failure(_ what: String, _ request: QuoteRequest, detail: String? = nil) -> CoreError {
        var metadata: Logger.Metadata = ["paymentRequest": "\(request.paymentRequestId)", "problem": "\(what)"]
        if let detail { metadata["error"] = "\(detail)" }
        logger.error("the shop's quote URL failed; the total is unchanged", metadata: metadata)
        return CoreError(.quoteFailed, "the shop could not price this change (its quote URL \(what)); the total is unchanged")
    }
}
