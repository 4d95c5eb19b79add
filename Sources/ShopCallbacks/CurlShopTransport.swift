import CurlClient
import OrchardCore

/// Calls to the shop (webhooks, quotes) over their own libcurl client (the shops' endpoints never share connections with
/// Apple's or the processors'): system trust, no redirects followed, small answers only. Plain
/// http is allowed here because configuration lets it through only to loopback hosts.
public final class CurlShopTransport: ShopTransport {
    let http: CurlHTTPClient

    /// - Parameter configuration: the client's settings (the `outbound` section's proxy and bounds);
    ///   it must allow `http` for the loopback endpoints configuration lets through.
    public init(configuration: CurlHTTPClient.Configuration = .init(allowedSchemes: ["https", "http"])) throws {
        http = try CurlHTTPClient(configuration: configuration)
    }

    deinit {
        http.shutdown()
    }

    public func post(url: String, headers: [(name: String, value: String)], body: [UInt8], timeout: Duration, merchant: String)
        async throws -> (status: Int, body: [UInt8])
    {
        var request = CurlRequest(
            method: "POST", url: url, headers: headers, body: body,
            timeouts: CurlTimeouts(connect: min(.seconds(3), timeout), total: timeout))
        // The client's per-group bound is outbound.maxShopCallsPerMerchant.
        request.concurrencyGroup = "merchant " + merchant
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
