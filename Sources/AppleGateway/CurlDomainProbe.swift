import CurlClient
import Foundation
import OrchardCore

/// Fetches `https://<domain>/.well-known/apple-developer-merchantid-domain-association` over
/// the libcurl client, without a client certificate and without following redirects, as
/// Apple's domain verification does.
public struct CurlDomainProbe: DomainProbe {
    let http: CurlHTTPClient
    let trust: RemoteEndpoint.Trust
    let connectTo: [String: String]

    /// - Parameters:
    ///   - trust: the CAs a domain's certificate must chain to (the system's; a test CA in tests).
    ///   - connectTo: domain → origin actually connected (`https://127.0.0.1:4443`), with the
    ///     domain sent as Host: a staging server before DNS points at it, or a test host.
    public init(http: CurlHTTPClient, trust: RemoteEndpoint.Trust = .system, connectTo: [String: String] = [:]) {
        self.http = http
        self.trust = trust
        self.connectTo = connectTo
    }

    public func associationFile(of domain: String) async throws(GatewayError) -> ProbeAnswer {
        let origin = connectTo[domain] ?? "https://\(domain)"
        let curlTrust = TLSTrust(caPEM: trust.caPEM)
        do {
            let response = try await http.execute(
                CurlRequest(
                    url: origin + "/.well-known/apple-developer-merchantid-domain-association",
                    headers: connectTo[domain] == nil ? [] : [(name: "Host", value: domain)], trust: curlTrust,
                    timeouts: CurlTimeouts(connect: .seconds(5), total: .seconds(10))))
            return ProbeAnswer(
                status: response.status, contentType: response.header("Content-Type"), location: response.header("Location"),
                body: response.body)
        } catch {
            if error.kind == .timedOut { throw GatewayError(.timedOut, "no answer in 10 s") }
            throw GatewayError(.unreachable, "\(error.kind.rawValue): \(error.message)")
        }
    }
}
