import CurlClient
import Foundation
import OrchardCore

/// One JSON call to a processor through the shared libcurl client.
struct ProcessorHTTP: Sendable {
    let http: CurlHTTPClient
    let endpoint: RemoteEndpoint

    struct Answer {
        var status: Int
        var json: [String: Any]
    }

    /// Sends `body`; a transport failure (timeout, reset, refused) is ``ProcessorNoAnswer``.
    /// `fresh`: on a new connection, so libcurl never repeats it by itself (see
    /// `CurlRequest.freshConnection`), for a processor that may not de-duplicate.
    func send(_ method: String, url: String, headers: [(name: String, value: String)], body: [UInt8]?, fresh: Bool = false)
        async throws -> Answer
    {
        guard endpoint.owns(url) else { throw ProcessorActionError("refusing to call \(url): not on \(endpoint.baseURL)") }
        let trust = TLSTrust(caPEM: endpoint.trust.caPEM)
        let response: CurlResponse
        do {
            var request = CurlRequest(
                method: method, url: url, headers: headers, body: body, trust: trust,
                timeouts: CurlTimeouts(connect: endpoint.connectTimeout, total: endpoint.timeout))
            request.freshConnection = fresh
            response = try await http.execute(request)
        } catch {
            throw ProcessorNoAnswer("\(error.kind.rawValue): \(error.message)")
        }
        let json = (try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any]) ?? [:]
        return Answer(status: response.status, json: json)
    }

    static func encode(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
    }
}
