import HTTPTypes
import Hummingbird
import Metrics

/// Counts and times every request by route pattern (never the path: `/api/orders/{id}`, not
/// an order ID), method and status, and keeps ``ServerActivity``'s in-flight count current. Outermost, so it
/// sees the status the client gets, errors included.
struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    static var methods: Set<HTTPRequest.Method> { [.get, .head, .post, .put, .delete, .patch, .options] }

    let activity: ServerActivity

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        activity.begin()
        Meter(label: "orchard_http_requests_in_flight").increment()
        defer {
            activity.end()
            Meter(label: "orchard_http_requests_in_flight").decrement()
        }
        do {
            let response = try await next(request, context)
            record(request, context, status: response.status.code, since: started)
            return response
        } catch {
            record(request, context, status: (error as? any HTTPResponseError)?.status.code ?? 500, since: started)
            throw error
        }
    }

    private func record(_ request: Request, _ context: Context, status: Int, since started: ContinuousClock.Instant) {
        // Hummingbird names unmatched requests "NotFound" and files "FileMiddleware"; a request a
        // middleware answered before routing has no route at all.
        let route =
            switch context.endpointPath {
            case nil, "NotFound": "unmatched"
            case "FileMiddleware": "static"
            case let path?: path
            }
        // Any other method is one label value, so made-up methods cannot add series.
        let method = Self.methods.contains(request.method) ? request.method.rawValue : "other"
        Counter(label: "orchard_http_requests_total", dimensions: [("route", route), ("method", method), ("status", "\(status)")])
            .increment()
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        Timer(
            label: "orchard_http_request_duration_seconds",
            dimensions: [("route", route), ("method", method), ("status_class", "\(status / 100)xx")]
        ).recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
