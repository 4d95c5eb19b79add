import Hummingbird
import NIOCore
import NIOPosix

/// Runs each request of the routes behind it on its connection's event loop, as a task executor
/// preference: the database's answers (postgres-nio and the SQLite writer answer on event loops
/// or threads of their own) then resume the handler on a loop, not by waking a thread of Swift's
/// cooperative pool at every `await`. Static files and the association file are not behind it:
/// they have nothing to wait for, and run on the pool with the connection.
///
/// Only the loops of NIO's shared group, which the server's connections run on, are used: a
/// test channel's loop (Hummingbird's router tests) runs a job enqueued from its own thread
/// only when something else wakes it, so a request there keeps the default executor.
struct EventLoopExecutorMiddleware<Context: RequestContext & EventLoopBound>: RouterMiddleware {
    /// One executor per loop of the shared group, made once.
    private let executors = MultiThreadedEventLoopGroup.singleton.makeIterator().map(EventLoopTaskExecutor.init)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let executor = executors.first(where: { $0.eventLoop === context.eventLoop }) else { return try await next(request, context) }
        return try await withTaskExecutorPreference(executor) {
            try await next(request, context)
        }
    }
}

/// A request context that knows its connection's event loop.
public protocol EventLoopBound {
    var eventLoop: any EventLoop { get }
}

/// One event loop as a task executor: a job enqueued here runs on the loop's thread.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
