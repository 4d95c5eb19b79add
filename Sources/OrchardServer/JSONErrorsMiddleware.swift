import HTTPTypes
import Hummingbird

/// Answers the router's own 404 in the API's error shape. A path no route matches (an empty or
/// unknown segment, a method the path does not take) and no file answers is thrown by Hummingbird
/// as a bare `HTTPError`, whose answer has no body; every other answer of the server is JSON, and
/// callers read `error.code`. The file middleware's 400 for a path it will not read is mapped the
/// same way; errors of other statuses (a file's 416) pass through unchanged.
struct JSONErrorsMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as HTTPError where error.status == .notFound {
            throw OrchardError(.notFound, "nothing here: no route or file answers \(request.method) at this path")
        } catch let error as HTTPError where error.status == .badRequest {
            // The file middleware's refusal of a path it will not read (a `..` segment).
            throw OrchardError(.invalidRequest, "this path cannot be served (a .. segment, or an encoding the server does not read)")
        }
    }
}
