import Foundation
import HTTPTypes
import Hummingbird

/// Routes whose body is JSON take `Content-Type: application/json` and nothing else.
///
/// A web page on any other site can make a shopper's browser send a `text/plain`,
/// form-encoded or multipart POST (or one with no Content-Type at all) without a CORS
/// preflight; `application/json` needs one, which Orchard never grants. So a JSON route
/// refuses every other media type with a 415 before its handler runs: before a rate-limit
/// token, a quote call or a call to Apple is spent, and before anything is read or written.
/// The decision is made here once, for every route registered with ``RouterMethods/postJSON(_:use:)``
/// or ``RouterMethods/putJSON(_:use:)``.
struct JSONContentTypeMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard Self.isJSON(request.headers[.contentType]) else {
            throw OrchardError(
                .unsupportedMediaType,
                "send the body as JSON with the header Content-Type: application/json (\(Self.describe(request.headers[.contentType])))")
        }
        return try await next(request, context)
    }

    /// `application/json`, any case, with at most a `charset=utf-8` parameter (JSON is UTF-8, RFC 8259).
    static func isJSON(_ value: String?) -> Bool {
        guard let value else { return false }
        // What browsers and most clients send, without the parameter parse below (Foundation's
        // trimming was a measurable part of every authorization's CPU).
        if value.utf8.elementsEqual("application/json".utf8) { return true }
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
        guard parts.removeFirst().lowercased() == "application/json" else { return false }
        return parts.allSatisfy { parameter in
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard pair.count == 2, pair[0] == "charset" else { return false }
            return pair[1] == "utf-8" || pair[1] == "\"utf-8\""
        }
    }

    /// What was sent, for the message: clipped, so a long header is not echoed back whole.
    static func describe(_ value: String?) -> String {
        guard let value else { return "none was sent" }
        return "this was \(String(value.prefix(64)).debugDescription)"
    }
}

extension RouterMethods {
    /// A POST route that takes a JSON body (see ``JSONContentTypeMiddleware``).
    @discardableResult
    func postJSON(_ path: RouterPath, use handler: @Sendable @escaping (Request, Context) async throws -> some ResponseGenerator) -> Self {
        group().add(middleware: JSONContentTypeMiddleware<Context>()).post(path, use: handler)
        return self
    }

    /// A PUT route that takes a JSON body (see ``JSONContentTypeMiddleware``).
    @discardableResult
    func putJSON(_ path: RouterPath, use handler: @Sendable @escaping (Request, Context) async throws -> some ResponseGenerator) -> Self {
        group().add(middleware: JSONContentTypeMiddleware<Context>()).put(path, use: handler)
        return self
    }
}
