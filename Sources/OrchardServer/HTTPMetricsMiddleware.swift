import HTTPTypes
import Hummingbird
import Metrics
import Synchronization

/// What the process is doing, for the graceful shutdown: requests in flight, and whether it is
/// draining (set when SIGTERM arrives). Read by the shutdown log; `/health` leaves it alone,
/// since a draining server no longer accepts the connection a health check would come on.
public final class ServerActivity: Sendable {
    private let inFlightCount = Atomic<Int>(0)
    private let drainingFlag = Atomic<Bool>(false)

    public init() {}

    /// Requests being answered right now.
    public var inFlight: Int { inFlightCount.load(ordering: .relaxed) }
    /// True once shutdown began.
    public var isDraining: Bool { drainingFlag.load(ordering: .relaxed) }

    public func beginDraining() { drainingFlag.store(true, ordering: .relaxed) }

    func begin() { inFlightCount.add(1, ordering: .relaxed) }
    func end() { inFlightCount.subtract(1, ordering: .relaxed) }
}

/// Counts and times every request by route pattern (never the path: `/api/orders/{id}`, not
/// an order ID), method and status, and keeps ``ServerActivity`` current. Outermost, so it
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
