import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import NIOCore
import Testing

@testable import OrchardConfiguration
@testable import OrchardServer
@testable import OrchardServices

/// The API's requests run on their connection's event loop, so the database's answers resume
/// them there; a route outside the middleware runs on Swift's default executor.
@Suite("Requests run on their connection's event loop")
struct EventLoopExecutorTests {
    @Test("behind the middleware a handler and what it awaits run on the connection's loop; outside it, not")
    func handlersRunOnTheirLoop() async throws {
        let router = Router(context: OrchardRequestContext.self)
        router.get("/outside") { _, context in context.eventLoop.inEventLoop ? "loop" : "pool" }
        router.group("inside").add(middleware: EventLoopExecutorMiddleware())
            .get("/") { _, context in
                let before = context.eventLoop.inEventLoop
                // An answer that comes from another thread, as a database's does.
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    Thread.detachNewThread { continuation.resume() }
                }
                return before && context.eventLoop.inEventLoop ? "loop" : "pool"
            }
        // Router tests' channels have a testing loop, which the middleware leaves alone.
        try await Application(router: router).test(.router) { client in
            let inside = try await client.execute(uri: "/inside", method: .get)
            #expect(String(buffer: inside.body) == "pool")
        }
        try await Application(router: router).test(.live) { client in
            for _ in 0..<20 {
                let inside = try await client.execute(uri: "/inside", method: .get)
                #expect(String(buffer: inside.body) == "loop")
                let outside = try await client.execute(uri: "/outside", method: .get)
                #expect(String(buffer: outside.body) == "pool")
            }
        }
    }
}
