import CurlClient
import Foundation
import OrchardCore
import SwiftASN1
import X509

/// Fetches `https://<domain>/.well-known/apple-developer-merchantid-domain-association` over
/// the libcurl client, without a client certificate and without following redirects, as
/// Apple's domain verification does, and reads the certificate the domain presented.
public struct CurlDomainProbe: DomainProbe {
    let http: CurlHTTPClient
    let trust: RemoteEndpoint.Trust
    let connectTo: [String: String]

    /// - Parameters:
    ///   - trust: the CAs a domain's certificate must chain to (the system's; a test CA in tests).
    ///   - connectTo: domain → origin actually connected (`https://127.0.0.1:4443`): a staging
    ///     server before DNS points at it, or a test host. The URL, the Host header, SNI and the
    ///     certificate's name check keep the domain, as when Apple fetches the file.
    public init(http: CurlHTTPClient, trust: RemoteEndpoint.Trust = .system, connectTo: [String: String] = [:]) {
        self.http = http
        self.trust = trust
        self.connectTo = connectTo
    }

    public func associationFile(of domain: String) async throws(GatewayError) -> ProbeAnswer {
        var request = CurlRequest(
            url: "https://\(domain)/.well-known/apple-developer-merchantid-domain-association", trust: TLSTrust(caPEM: trust.caPEM),
            timeouts: CurlTimeouts(connect: .seconds(5), total: .seconds(10)))
        request.readsPeerCertificates = true
        if let origin = connectTo[domain] {
            guard let target = Self.hostAndPort(origin) else {
                throw GatewayError(.unreachable, "\(origin) is not an https://host:port origin")
            }
            request.connectTo = "\(domain):443:\(target)"
        }
        do {
            let response = try await http.execute(request)
            return ProbeAnswer(
                status: response.status, contentType: response.header("Content-Type"), location: response.header("Location"),
                body: response.body, certificateNotValidAfter: Self.leaf(of: response.peerCertificates, for: domain)?.notValidAfter,
                fileSignature: response.header(DomainFileSigner.headerName))
        } catch {
            if error.kind == .timedOut { throw GatewayError(.timedOut, "no answer in 10 s") }
            throw GatewayError(.unreachable, "\(error.kind.rawValue): \(error.message)")
        }
    }

    /// The domain's own certificate among those its server presented: not a CA, and naming the
    /// domain (libcurl checked that one against the domain); failing a name (a legacy certificate
    /// with only a common name), the first that is not a CA, since TLS sends the server's own first.
    static func leaf(of chain: [String], for domain: String) -> Certificate? {
        let certificates = chain.compactMap { try? Certificate(pemEncoded: $0) }.filter { certificate in
            guard let constraints = try? certificate.extensions.basicConstraints else { return true }
            return constraints == .notCertificateAuthority
        }
        return certificates.first { names($0, domain) } ?? certificates.first
    }

    /// Whether the certificate's subject alternative names cover `domain` (a `*.` name covers one label).
    static func names(_ certificate: Certificate, _ domain: String) -> Bool {
        guard let names = try? certificate.extensions.subjectAlternativeNames else { return false }
        let host = domain.lowercased()
        return names.contains { name in
            guard case .dnsName(let dnsName) = name else { return false }
            let pattern = dnsName.lowercased()
            if pattern.hasPrefix("*."), let dot = host.firstIndex(of: ".") {
                return host[dot...] == pattern.dropFirst()
            }
            return pattern == host
        }
    }

    /// `host:port` of an `https://host[:port]` origin (IPv6 in brackets), as CURLOPT_CONNECT_TO takes
    /// it; nil for anything else (another scheme, a path, credentials).
    public static func hostAndPort(_ origin: String) -> String? {
        guard origin.hasPrefix("https://") else { return nil }
        var authority = Substring(origin.dropFirst(8))
        if authority.hasSuffix("/") { authority = authority.dropLast() }
        guard !authority.isEmpty, !authority.contains(where: { "/?#@ ".contains($0) }) else { return nil }
        let closing = authority.lastIndex(of: "]")
        if let colon = authority.lastIndex(of: ":"), closing.map({ colon > $0 }) ?? true {
            guard let port = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(port),
                authority.startIndex < colon
            else { return nil }
            return String(authority)
        }
        return "\(authority):443"
    }
}
