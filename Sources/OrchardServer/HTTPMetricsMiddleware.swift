import HTTPTypes
import Hummingbird
import Metrics
import OrchardServices
import Synchronization

/// Counts and times every request by route pattern (never the path: `/api/orders/{id}`, not
/// an order ID), method and status, and keeps ``ServerActivity``'s in-flight count current. Outermost, so it
/// sees the status the client gets, errors included.
struct HTTPMetricsMiddleware<Context: RequestContext>: RouterMiddleware {
    let activity: ServerActivity
    /// The series' handles, made once each and reused by every request.
    let series = HTTPMetricSeries()

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        activity.begin()
        let inFlight = series.inFlight
        inFlight.increment()
        defer {
            activity.end()
            inFlight.decrement()
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
        let handles = series.handles(route: route, method: Self.methodLabel(request.method), status: status)
        handles.requests.increment()
        let (seconds, attoseconds) = (ContinuousClock.now - started).components
        handles.duration.recordNanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Any other method is one label value, so made-up methods cannot add series.
    static func methodLabel(_ method: HTTPRequest.Method) -> String {
        switch method {
        case .get, .head, .post, .put, .delete, .patch, .options: method.rawValue
        default: "other"
        }
    }
}

/// `orchard_http_requests_total` and `orchard_http_request_duration_seconds` by their labels, and the
/// in-flight gauge. A metric handle is made through the metrics backend (a lock, the labels hashed, an
/// allocation per dimension); made per request that was most of what the metrics cost. Handles are
/// made on first use, after the backend is bootstrapped, and the same series get the same handles.
final class HTTPMetricSeries: Sendable {
    struct Key: Hashable {
        var route: String
        var method: String
        var status: Int
    }

    struct Handles: Sendable {
        let requests: Counter
        let duration: Timer
    }

    /// Routes, methods and statuses are few, but a bound keeps a surprise from growing the table:
    /// past it, handles are made per request as before (the same series either way).
    static let maximumSeries = 4_096

    private let table = Mutex<[Key: Handles]>([:])
    private let inFlightMeter = Mutex<Meter?>(nil)

    /// How many series have their handles held.
    var count: Int { table.withLock { $0.count } }

    var inFlight: Meter {
        inFlightMeter.withLock { meter in
            if let meter { return meter }
            let made = Meter(label: "orchard_http_requests_in_flight")
            meter = made
            return made
        }
    }

    func handles(route: String, method: String, status: Int) -> Handles {
        let key = Key(route: route, method: method, status: status)
        if let found = table.withLock({ $0[key] }) { return found }
        let made = Handles(
            requests: Counter(
                label: "orchard_http_requests_total", dimensions: [("route", route), ("method", method), ("status", "\(status)")]),
            duration: Timer(
                label: "orchard_http_request_duration_seconds",
                dimensions: [("route", route), ("method", method), ("status_class", "\(status / 100)xx")]))
        table.withLock { table in
            if table.count < Self.maximumSeries { table[key] = made }
        }
        return made
    }
}
