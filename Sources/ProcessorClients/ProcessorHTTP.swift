import CurlClient
import Foundation
import OrchardCore

/// One JSON call to a processor through the shared libcurl client.
struct ProcessorHTTP: Sendable {
    let http: CurlHTTPClient
    let endpoint: RemoteEndpoint

    /// A processor's answer: its status and its body's JSON object, decoded by type.
    struct Answer {
        var status: Int
        /// Always an object: a body that is not a JSON object (empty, HTML from a proxy, a number
        /// past `Double`, invalid UTF-8, nesting too deep) reads as an empty one: every field is
        /// missing, and each processor's rules go by the status alone (a 2xx is then no answer).
        var json: JSONValue

        init(status: Int, body: [UInt8]) {
            self.status = status
            if let decoded = JSONValue.decode(body), decoded.object != nil {
                json = decoded
            } else {
                json = [:]
            }
        }

        /// Whether the body held no field at all.
        var isEmpty: Bool { json.object?.isEmpty ?? true }
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
        return Answer(status: response.status, body: response.body)
    }

    /// A request body: keys sorted, `/` unescaped. Throws (never traps) on a value JSON cannot
    /// hold, such as a non-finite number.
    static func encode(_ body: JSONValue) throws -> [UInt8] {
        try body.encoded()
    }
}

extension JSONValue {
    /// A code or identifier as processors write it: a string, or a number as its decimal text
    /// (`1409`); nil for any other type (a boolean is no code).
    var code: String? {
        switch self {
        case .string(let value): value
        case .integer(let value): String(value)
        case .number(let value): String(value)
        default: nil
        }
    }

    /// An array whose elements are all objects (a list of payments, events or errors); nil when
    /// any element is not one, so a list Worldpay or Worldline did not send is not half read.
    var objects: [JSONValue]? {
        guard let array, array.allSatisfy({ $0.object != nil }) else { return nil }
        return array
    }
}
