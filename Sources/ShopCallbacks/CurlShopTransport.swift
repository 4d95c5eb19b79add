import CurlClient
import OrchardCore

/// Calls to the shop (webhooks, quotes) over their own libcurl clients (the shops' endpoints never
/// share connections with Apple's or the processors'): system trust, no redirects followed, small
/// answers only. Plain http is allowed here because configuration lets it through only to loopback
/// hosts. A tenant's endpoint (a registered merchant's, set through the admin API) goes through a
/// client of its own whose every connection is checked against ``TenantDestinations`` on the
/// address it resolved to, and which shares no connection with the configured merchants' calls.
public final class CurlShopTransport: ShopTransport {
    let configured: CurlHTTPClient
    let tenants: CurlHTTPClient

    /// - Parameters:
    ///   - configuration: the clients' settings (the `outbound` section's proxy and bounds); it must
    ///     allow `http` for the loopback endpoints configuration lets through.
    ///   - tenants: where registered merchants' endpoints may connect (default: public addresses only).
    public init(
        configuration: CurlHTTPClient.Configuration = .init(allowedSchemes: ["https", "http"]),
        tenants: TenantDestinations = TenantDestinations()
    ) throws {
        configured = try CurlHTTPClient(configuration: configuration)
        var checked = configuration
        checked.destinationCheck = tenants.curlCheck
        self.tenants = try CurlHTTPClient(configuration: checked)
    }

    deinit {
        configured.shutdown()
        tenants.shutdown()
    }

    public func post(
        to endpoint: WebhookEndpoint, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration, merchant: String
    ) async throws -> (status: Int, body: [UInt8]) {
        let http = endpoint.chosenBy == .tenant ? tenants : configured
        var request = CurlRequest(
            method: "POST", url: endpoint.url, headers: headers, body: body,
            timeouts: CurlTimeouts(connect: min(.seconds(3), timeout), total: timeout))
        // The client's per-group bound is outbound.maxShopCallsPerMerchant.
        request.concurrencyGroup = "merchant " + merchant
        // A shop is told no trace of Orchard's: a request's (which may be an upstream proxy's)
        // would reach a tenant's URL from a webhook test, a retirement's last deliveries or a quote.
        request.startsTrace = true
        let response: CurlResponse
        do {
            response = try await http.execute(request)
        } catch {
            if error.kind == .busy { throw ShopCallsBusy(error.message) }
            throw error
        }
        return (response.status, response.body)
    }
}

extension TenantDestinations {
    /// This policy as the HTTP client's connect-time check.
    public var curlCheck: CurlDestinationCheck {
        CurlDestinationCheck { [self] bytes in
            guard let address = IPAddress(bytes: bytes) else { return "an address of \(bytes.count) bytes, neither IPv4 nor IPv6" }
            return refusal(for: address)
        }
    }
}
