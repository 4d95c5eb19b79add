import HTTPTypes
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The HTTP metrics' handles: made once per series and reused, never one per request.
@Suite("HTTP metrics: one handle per series")
struct HTTPMetricsMiddlewareTests {
    @Test("the same route, method and status get the same handles; another status or route gets its own")
    func handlesAreReused() {
        let series = HTTPMetricSeries()
        let first = series.handles(route: "static", method: "GET", status: 200)
        let again = series.handles(route: "static", method: "GET", status: 200)
        #expect(first.requests === again.requests && first.duration === again.duration)
        #expect(series.handles(route: "static", method: "GET", status: 304).requests !== first.requests)
        #expect(series.handles(route: "unmatched", method: "GET", status: 200).requests !== first.requests)
        #expect(series.inFlight === series.inFlight)
    }

    @Test("the table stops growing at its bound: past it, handles are made per request and nothing is held")
    func tableIsBounded() {
        let series = HTTPMetricSeries()
        for status in 0..<HTTPMetricSeries.maximumSeries {
            _ = series.handles(route: "/r", method: "GET", status: status)
        }
        #expect(series.count == HTTPMetricSeries.maximumSeries)
        let past = series.handles(route: "/r", method: "GET", status: HTTPMetricSeries.maximumSeries)
        #expect(series.handles(route: "/r", method: "GET", status: HTTPMetricSeries.maximumSeries).requests !== past.requests)
        #expect(series.count == HTTPMetricSeries.maximumSeries)
    }

    @Test("a method outside the standard ones is one label value, so made-up methods add no series")
    func methodLabels() throws {
        for method: HTTPRequest.Method in [.get, .head, .post, .put, .delete, .patch, .options] {
            #expect(HTTPMetricsMiddleware<OrchardRequestContext>.methodLabel(method) == method.rawValue)
        }
        for name in ["BREW", "TRACE", "CONNECT", "PROPFIND"] {
            #expect(HTTPMetricsMiddleware<OrchardRequestContext>.methodLabel(try #require(HTTPRequest.Method(name))) == "other")
        }
    }
}
